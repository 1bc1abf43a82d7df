// The conformance suite's test cases, for the runners an executor's test
// unit names before including this file:
//   #define FUSEX_CONFORMANCE_RUNNERS a, b, c   // runner objects (cases.hpp)
//   #define FUSEX_CONFORMANCE_ELEMENTWISE 1      // unary, binary, bool, convert
//   #define FUSEX_CONFORMANCE_STRUCTURE 1        // remaps, reductions, matmul
// Each case runs for every input layout (GENERATE) and every runner (one
// section each), so a failure names the prim, dtype, layout and executor.
#include "cases.hpp"

#if FUSEX_CONFORMANCE_ELEMENTWISE
TEMPLATE_TEST_CASE("conformance: unary prims", "[conformance]", float, double, fusex::bf16, fusex::f16, std::int32_t,
                   std::int64_t) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::unary_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}

TEMPLATE_TEST_CASE("conformance: binary prims and where", "[conformance]", float, double, fusex::bf16, fusex::f16,
                   std::int32_t, std::int64_t) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::binary_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}

TEST_CASE("conformance: bool comparisons and where", "[conformance]") {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::bool_case(run, l); }, FUSEX_CONFORMANCE_RUNNERS);
}

TEMPLATE_TEST_CASE("conformance: convert_element_type to every dtype", "[conformance]", float, double, fusex::bf16,
                   fusex::f16, std::int32_t, std::int64_t, bool) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::convert_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}
#endif

#if FUSEX_CONFORMANCE_STRUCTURE
TEMPLATE_TEST_CASE("conformance: slice, pad, cat, permute, reshape, broadcast_in_dim", "[conformance]", float, double,
                   fusex::bf16, fusex::f16, std::int32_t, std::int64_t, bool) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::remap_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}

TEMPLATE_TEST_CASE("conformance: sum, amax, var_mean, mean", "[conformance]", float, double, fusex::bf16, fusex::f16,
                   std::int32_t, std::int64_t, bool) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::reduce_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}

TEMPLATE_TEST_CASE("conformance: matmul", "[conformance]", float, double, fusex::bf16, fusex::f16) {
  const auto how = GENERATE(from_range(fxt::conf::all_layouts));
  fxt::conf::for_each_runner(how, [](const auto& run, auto l) { fxt::conf::matmul_case<TestType>(run, l); },
                             FUSEX_CONFORMANCE_RUNNERS);
}
#endif
