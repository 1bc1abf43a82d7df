#pragma once
// The extents the planner models. Run-time extents are unknown while the
// compiler plans, so the cost model needs a value for each: the user's hint
// where there is one (typical B, T, rows; exact hidden or head sizes), a
// constant where the trace has one, and otherwise a default that weighs every
// tensor argument alike whatever its rank (docs/partitioner.md, "Extents").
//
//   constexpr fx::extent_hints pythia = fx::extent_hints{}.shape(0, {2048, 4096}).value(10, 32);
//   constexpr auto plan = fx::partition(prog, fx::policy::fused<>{}, fx::hints<pythia>);

#include <cstdint>
#include <vector>

#include "../capture/extents.hpp"
#include "../capture/graph.hpp"

namespace fusex {

template <extent_hints H>
struct hints_t {
  static constexpr extent_hints value = H;
};
template <extent_hints H>
inline constexpr hints_t<H> hints{};

// Defaults for what no hint or constant fixes. Every tensor argument is
// modelled with the same number of elements, split evenly over its axes that
// no earlier argument fixed, so a rank-4 argument weighs what a rank-2 one
// does; an index argument (head counts, head and rotary sizes) is modelled as
// a typical such value.
inline constexpr double default_argument_elements = 1024.0 * 1024.0;
inline constexpr double default_index_value = 32;

namespace detail::planning {

constexpr double root(double x, int n) {  // x^(1/n), for x >= 1
  if (n <= 1) return x;
  double lo = 1, hi = x > 1 ? x : 1;
  for (int it = 0; it < 100; ++it) {
    const double mid = (lo + hi) / 2;
    double p = 1;
    for (int i = 0; i < n; ++i) p *= mid;
    (p > x ? hi : lo) = mid;
  }
  return lo;
}

constexpr double round_extent(double x) {
  const double r = static_cast<double>(static_cast<std::int64_t>(x + 0.5));
  return r < 1 ? 1 : r;
}

// The modelled value of every expression, by equivalence class: constants,
// then hints, then index arguments, then the per-argument default for tensor
// extents in argument order, then derived expressions from their operands.
// `eclass[e]` is e's class representative. Hinted and default tensor
// extents are multiplied by `scale` (constants and index arguments are not).
constexpr std::vector<double> extent_values(const node* nodes, int nnodes, const expr* exprs,
                                            const std::int32_t* eclass, int nexpr, const extent_hints& h,
                                            double scale = 1) {
  std::vector<double> cls(static_cast<std::size_t>(nexpr), -1.0);
  for (int e = 0; e < nexpr; ++e)
    if (exprs[e].kind == expr_kind::constant) cls[eclass[e]] = static_cast<double>(exprs[e].value);
  for (int i = 0; i < h.count; ++i)
    for (int e = 0; e < nexpr; ++e) {
      const expr& x = exprs[e];
      const bool match = h.hint[i].axis < 0 ? x.kind == expr_kind::param && x.value == h.hint[i].arg
                                            : x.kind == expr_kind::extent && x.a == h.hint[i].arg && x.b == h.hint[i].axis;
      if (match && cls[eclass[e]] < 0)
        cls[eclass[e]] = x.kind == expr_kind::param ? static_cast<double>(h.hint[i].value)
                                                    : scale == 1 ? static_cast<double>(h.hint[i].value)
                                                    : round_extent(static_cast<double>(h.hint[i].value) * scale);
    }
  // Index arguments before tensor extents: a slice bound or a rotary size
  // that equals a tensor's extent then sizes that tensor, not the reverse.
  for (int e = 0; e < nexpr; ++e)
    if (exprs[e].kind == expr_kind::param && cls[eclass[e]] < 0) cls[eclass[e]] = default_index_value;
  // tensor arguments in declaration order, over their whole shapes (an axis
  // fixed by a constant counts as known)
  int max_arg = -1;
  for (int v = 0; v < nnodes; ++v)
    if (nodes[v].op == op_kind::input && nodes[v].slot > max_arg) max_arg = nodes[v].slot;
  for (int arg = 0; arg <= max_arg; ++arg) {
    double known = 1;
    int unknown = 0;
    std::vector<int> open;
    for (int v = 0; v < nnodes; ++v) {
      if (nodes[v].op != op_kind::input || nodes[v].slot != arg) continue;
      for (int i = 0; i < nodes[v].rank; ++i) {
        const int c = eclass[nodes[v].shape[i]];
        if (cls[c] >= 0) {
          known *= cls[c] > 1 ? cls[c] : 1;
          continue;
        }
        bool have = false;
        for (int o : open) have = have || o == c;
        if (!have) {
          open.push_back(c);
          ++unknown;
        }
      }
    }
    if (unknown == 0) continue;
    const double left = default_argument_elements / known;
    const double each = round_extent(root(left > 1 ? left : 1, unknown) * scale);
    for (int c : open) cls[c] = each;
  }
  std::vector<double> val(static_cast<std::size_t>(nexpr), 0.0);
  for (int e = 0; e < nexpr; ++e) {  // operands precede the expressions built from them
    const expr& x = exprs[e];
    double v = cls[eclass[e]];
    if (v < 0) {
      const double l = x.a >= 0 && x.a < e ? val[x.a] : 1, r = x.b >= 0 && x.b < e ? val[x.b] : 1;
      switch (x.kind) {
        case expr_kind::add: v = l + r; break;
        case expr_kind::sub: v = l > r ? l - r : 0; break;
        case expr_kind::mul: v = l * r; break;
        case expr_kind::div: v = r > 0 ? static_cast<double>(static_cast<std::int64_t>(l / r)) : 0; break;
        case expr_kind::mod: v = r > 0 ? l - r * static_cast<double>(static_cast<std::int64_t>(l / r)) : 0; break;
        default: v = 1; break;
      }
      cls[eclass[e]] = v;
    }
    val[e] = v;
  }
  return val;
}

}  // namespace detail::planning
}  // namespace fusex
