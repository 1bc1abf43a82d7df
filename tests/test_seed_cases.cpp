// The seed's cases (Lightning Thunder #256, #446; NVIDIA/Fuser #1597, #1473):
// kernel counts and modelled bytes are asserted at compile time, and every
// policy's host execution is compared with the reference.
#include "../examples/seed/seed_programs.hpp"
#include "executor_check.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {

constexpr auto dgelu_plan = fx::partition(seed::dgelu);
static_assert(dgelu_plan.kernels() == 1, "the seed's dGeLU is one kernel");
static_assert(dgelu_plan.bytes_at_minimum());

constexpr auto rope_fwd_plan = fx::partition(seed::rope_forward);
static_assert(rope_fwd_plan.kernels() == 1, "qkv split + RoPE (GQA, partial rotary) is one kernel writing q, k, v");
static_assert(rope_fwd_plan.group(0).nwrites == 3);
static_assert(rope_fwd_plan.bytes_at_minimum());

constexpr auto rope_bwd_plan = fx::partition(seed::rope_backward);
static_assert(rope_bwd_plan.kernels() == 1, "the RoPE backward is one kernel writing dqkv");
static_assert(rope_bwd_plan.bytes_at_minimum());

constexpr auto ln_plan = fx::partition(seed::layer_norm);
static_assert(ln_plan.kernels() == 1, "LayerNorm forward is one row kernel");
static_assert(ln_plan.group(0).kind == fx::group_kind::row_reduction);
static_assert(ln_plan.bytes_at_minimum());

// The dGeLU part of the parallel-residual graph: nodes that depend on the
// saved `fc` activation and feed the second MLP matmul.
template <class G>
constexpr bool is_dgelu_node(const G& g, int v) {
  const int fc = g.params[1].node;
  int mm2 = -1;  // the matmul whose left operand is the dGeLU output
  int seen = 0;
  for (int i = 0; i < g.num_nodes(); ++i)
    if (g.nodes[i].op == fx::op_kind::matmul && ++seen == 2) mm2 = i;
  std::int8_t from_fc[G::sizes.nodes] = {}, to_mm2[G::sizes.nodes] = {};
  from_fc[fc] = 1;
  for (int i = 0; i < g.num_nodes(); ++i)
    for (int k = 0; k < g.nodes[i].nargs; ++k) from_fc[i] |= from_fc[g.operand(i, k)];
  to_mm2[g.operand(mm2, 0)] = 1;
  for (int i = g.num_nodes() - 1; i >= 0; --i)
    if (to_mm2[i])
      for (int k = 0; k < g.nodes[i].nargs; ++k) to_mm2[g.operand(i, k)] = 1;
  const auto op = g.nodes[v].op;
  return from_fc[v] && to_mm2[v] && op != fx::op_kind::input && op != fx::op_kind::constant;
}
template <class Plan>
constexpr int dgelu_groups(Plan p) {
  const auto& g = Plan::graph;
  bool used[Plan::program_type::sizes.nodes] = {};
  int n = 0;
  for (int v = 0; v < g.num_nodes(); ++v)
    if (is_dgelu_node(g, v) && !used[p.group_of(v)]) {
      used[p.group_of(v)] = true;
      ++n;
    }
  return n;
}
constexpr int dgelu_node_count() {
  const auto& g = decltype(seed::parallel_residual_backward)::graph;
  int n = 0;
  for (int v = 0; v < g.num_nodes(); ++v) n += is_dgelu_node(g, v);
  return n;
}
static_assert(dgelu_node_count() >= 14, "the dGeLU subgraph is found");

constexpr auto pr_fused = fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{});
constexpr auto pr_greedy = fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{});
static_assert(dgelu_groups(pr_fused) == 1, "a claimed cat next to it leaves the dGeLU one kernel");
static_assert(dgelu_groups(pr_greedy) >= 2, "the greedy claim splits the dGeLU, as in Thunder #256");
static_assert(pr_fused.cost() <= pr_greedy.cost());

// At the shapes that matter (Pythia-6.9b, and those of examples/seed_cases):
// the default plan costs no more than the greedy claim or the unfused plan
// at those extents, and keeps the dGeLU whole.
template <seed::residual_shape S>
constexpr bool default_plan_wins() {
  constexpr auto h = fx::hints<seed::residual_hints(S)>;
  constexpr auto fused = fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, h);
  constexpr auto greedy = fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{}, h);
  constexpr auto unfused = fx::partition(seed::parallel_residual_backward, fx::policy::unfused<seed::cat_executor>{}, h);
  return fused.cost() <= greedy.cost() && fused.cost() <= unfused.cost() && dgelu_groups(fused) == 1;
}
static_assert(default_plan_wins<seed::pythia_6_9b>(), "Pythia-6.9b shapes");
static_assert(default_plan_wins<seed::seed_case_shape>(), "seed_cases shapes");

// A claimant without can_fuse: its claims stay its own, each run by its kernel.
struct cat_kernel_only {
  static constexpr const char* name = "cat-kernel";
  static constexpr bool claims(const fx::node& n) { return n.op == fx::op_kind::cat; }
  static inline int calls = 0;
  static void run_host(const fx::claimed_call& c) {
    ++calls;
    seed::cat_executor::run_host(c);
  }
};
constexpr auto rope_bwd_cat_kernel = fx::partition(seed::rope_backward, fx::policy::fused<cat_kernel_only>{});
template <class Plan>
constexpr int claimed_singletons(Plan p) {
  int n = 0;
  for (int i = 0; i < p.groups(); ++i) n += p.group(i).kind == fx::group_kind::claimed && p.group(i).nmembers == 1;
  return n;
}
static_assert(claimed_singletons(rope_bwd_cat_kernel) == 3, "the RoPE backward's three cats, each its own claimed group");

struct rope_shape {
  int B, T, n_head, groups, hs, n_elem;
  int C() const { return (n_head + 2 * groups) * hs; }
};

// Random arguments of parallel_residual_backward at shape s, in order.
auto residual_args(const seed::residual_shape& s) {
  const int N = static_cast<int>(s.B * s.T), C = static_cast<int>(s.C), I = static_cast<int>(s.I);
  const int B = static_cast<int>(s.B), T = static_cast<int>(s.T), nh = static_cast<int>(s.n_head),
            g = static_cast<int>(s.groups), hs = static_cast<int>(s.hs), ne = static_cast<int>(s.n_elem);
  return std::tuple{random_tensor<fx::bf16, 2>({N, C}),           random_tensor<fx::bf16, 2>({N, I}),
                    random_tensor<fx::bf16, 2>({C, I}),           random_tensor<fx::bf16, 2>({I, C}),
                    random_tensor<fx::bf16, 4>({B, nh, T, hs}),   random_tensor<fx::bf16, 4>({B, g, T, hs}),
                    random_tensor<fx::bf16, 4>({B, g, T, hs}),    random_tensor<fx::bf16, 2>({T, ne}),
                    random_tensor<fx::bf16, 2>({T, ne}),          random_tensor<fx::bf16, 2>({(nh + 2 * g) * hs, C}),
                    nh, g, hs, ne};
}
template <class Args>
auto inputs_of(const Args& args) {
  return std::apply([](const auto&... a) { return fx::inputs(a...); }, args);
}
// The small shape the policy checks run at (bf16 rounding through the
// matmuls stays within the dtype's tolerance).
constexpr seed::residual_shape small_residual{2, 4, 32, 64, 4, 2, 8, 6};

}  // namespace

TEST_CASE("seed: dGeLU, 1 kernel at minimum bytes, every policy matches the reference", "[seed]") {
  auto x = random_tensor<fx::bf16, 2>({33, 517}, -6, 6);
  auto dy = random_tensor<fx::bf16, 2>({33, 517});
  check_policies(seed::dgelu, "dgelu", x, dy);
}

TEST_CASE("seed: LitGPT qkv split + RoPE forward (GQA, n_elem < head_size)", "[seed]") {
  for (rope_shape s : {rope_shape{2, 5, 8, 2, 16, 8}, rope_shape{1, 3, 4, 4, 8, 6}, rope_shape{1, 4, 6, 1, 8, 4}}) {
    INFO("n_head " << s.n_head << " groups " << s.groups << " hs " << s.hs << " n_elem " << s.n_elem);
    auto qkv = random_tensor<fx::bf16, 3>({s.B, s.T, s.C()});
    auto cos = random_tensor<fx::bf16, 2>({s.T, s.n_elem}), sin = random_tensor<fx::bf16, 2>({s.T, s.n_elem});
    check_policies(seed::rope_forward, "rope_forward", qkv, cos, sin, s.n_head, s.groups, s.hs, s.n_elem);
  }
}

TEST_CASE("seed: RoPE backward to dqkv", "[seed]") {
  const rope_shape s{2, 5, 8, 2, 16, 8};
  auto dq = random_tensor<fx::bf16, 4>({s.B, s.n_head, s.T, s.hs});
  auto dk = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.hs}), dv = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.hs});
  auto cos = random_tensor<fx::bf16, 2>({s.T, s.n_elem}), sin = random_tensor<fx::bf16, 2>({s.T, s.n_elem});
  check_policies(seed::rope_backward, "rope_backward", dq, dk, dv, cos, sin, s.n_head, s.groups, s.hs, s.n_elem);
}

TEST_CASE("seed: a claimant without can_fuse runs each of its claims", "[seed]") {
  const rope_shape s{2, 5, 8, 2, 16, 8};
  auto dq = random_tensor<fx::bf16, 4>({s.B, s.n_head, s.T, s.hs});
  auto dk = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.hs}), dv = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.hs});
  auto cos = random_tensor<fx::bf16, 2>({s.T, s.n_elem}), sin = random_tensor<fx::bf16, 2>({s.T, s.n_elem});
  const auto ref = fx::evaluate(seed::rope_backward, fx::reference, dq, dk, dv, cos, sin, s.n_head, s.groups, s.hs, s.n_elem);
  cat_kernel_only::calls = 0;
  const auto got = fx::evaluate(rope_bwd_cat_kernel, fx::host{}, dq, dk, dv, cos, sin, s.n_head, s.groups, s.hs, s.n_elem);
  CHECK(cat_kernel_only::calls == 3);
  require_close(got, ref, "rope backward, cats on the claimant's kernel");
}

TEST_CASE("seed: LayerNorm forward", "[seed]") {
  auto x = random_tensor<fx::bf16, 2>({64, 768});
  auto wv = random_tensor<fx::bf16, 1>({768}), bv = random_tensor<fx::bf16, 1>({768});
  check_policies(seed::layer_norm, "layer_norm", x, wv, bv, 1e-5f);
}

TEST_CASE("seed: hinted extents model the real bytes", "[seed][planner]") {
  // At the hinted shapes, the plan's modelled bytes are the bytes its groups
  // move for real arguments of those shapes (modelled_traffic binds them).
  constexpr seed::residual_shape s = seed::seed_case_shape;
  constexpr auto plan = fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{},
                                      fx::hints<seed::residual_hints(s)>);
  const auto args = residual_args(s);
  const fx::traffic t = fx::modelled_traffic(plan, inputs_of(args));
  CHECK(t.bytes == plan.bytes());
  CHECK(t.min_bytes == plan.min_bytes());
  CHECK(t.launches == plan.kernels());
}

TEST_CASE("seed: a choice among plans compiled ahead picks the cheapest at the actual extents", "[seed][planner]") {
  constexpr seed::residual_shape s = seed::seed_case_shape;
  constexpr auto pythia = fx::hints<seed::residual_hints(seed::pythia_6_9b)>;
  constexpr auto here = fx::hints<seed::residual_hints(s)>;
  constexpr auto plans =
      fx::choice(fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{}, here),
                 fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, pythia),
                 fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, here));
  static_assert(plans.size == 3);
  static_assert(plans.candidate<1>().kernels() == 6);  // candidates keep their compile-time properties
  // The fused plans at both shapes partition alike: one instantiation.
  static_assert(plans.canonical<2>() == 1 && plans.canonical<1>() == 1 && plans.canonical<0>() == 0);
  const auto args = residual_args(s);
  const auto in = inputs_of(args);
  // the greedy claim costs more here, so the first fused candidate runs
  const double c0 = fx::modelled_cost(plans.candidate<0>(), in), c1 = fx::modelled_cost(plans.candidate<1>(), in);
  CHECK(c1 < c0);
  CHECK(fx::choose(plans, in) == 1);
  const std::string why = fx::explain(plans, in);
  CHECK(why.find("picked candidate 1") != std::string::npos);
  CHECK(why.find("(same plan as candidate 1)") != std::string::npos);
  // and the candidate it runs computes what the reference computes
  const auto small = residual_args(small_residual);
  const auto ref = std::apply(
      [](const auto&... a) { return fx::evaluate(seed::parallel_residual_backward, fx::reference, a...); }, small);
  const auto got = std::apply([&](const auto&... a) { return fx::evaluate(plans, fx::host{}, a...); }, small);
  require_close(got, ref, "plan choice");
}

TEST_CASE("seed: parallel-residual backward with a claimed cat", "[seed]") {
  std::apply(
      [](const auto&... a) {
        check_policies<seed::cat_executor>(seed::parallel_residual_backward, "parallel_residual", a...);
      },
      residual_args(small_residual));
}
