// A LLaMA-family block (RMSNorm, GQA 6 heads in 2 groups, full RoPE,
// SwiGLU) against litgpt 0.5.13, and its per-group layout against 0.5.4.
#include "block_check.hpp"

namespace {

TEST_CASE("LLaMA GQA block equals litgpt: output and all gradients, f32 and bf16", "[litgpt]") {
  const auto ref = litgpt_data::load("llama-gqa");
  REQUIRE(ref.cfg("n_query_groups") < ref.cfg("n_head"));
  run_case<float, blocks::llama_grad<float>>(ref);
  run_case<fx::bf16, blocks::llama_grad<fx::bf16>>(ref);
}

TEST_CASE("LLaMA GQA block, per-group qkv layout, equals litgpt 0.5.4", "[litgpt]") {
  const auto ref = litgpt_data::load("llama-gqa-grouped");
  REQUIRE(ref.litgpt == "0.5.4");
  run_case<float, blocks::llama_grad<float, qkv_layout::grouped>>(ref);
  CHECK(run_case<float, blocks::llama_grad<float>>(ref, false).worst > 0.05);
}

}  // namespace
