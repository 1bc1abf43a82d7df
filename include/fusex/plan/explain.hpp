#pragma once
// explain(plan): a readable account of a plan, one block per group with its
// executor, ops, reads, writes and modelled bytes, and totals against the
// minimum (each program input read once, each output written once).
//
//   std::cout << fusex::explain(plan);

#include <cstdio>
#include <string>

#include "../capture/print.hpp"
#include "../runtime/bind.hpp"
#include "plan.hpp"

namespace fusex {

namespace detail {
inline std::string format_bytes(double b) {
  char buf[48];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}
}  // namespace detail

template <class P, class Policy>
std::string explain(plan<P, Policy> pl) {
  const auto& g = P::graph;
  const auto& d = pl.data;
  constexpr extent_hints hints = detail::planning::policy_traits<Policy>::hints;
  constexpr cost_model model = plan<P, Policy>::model;
  std::string s = "# fusex plan: " + std::to_string(d.ngroups) + (d.ngroups == 1 ? " kernel" : " kernels") +
                  " for " + std::to_string(P::sizes.nodes) + " nodes, modelled at " +
                  (hints.count > 0 ? "hinted extents" : "default extents");
  if (model.extent_scale != 1) s += " x " + detail::format_double(model.extent_scale);
  if (model.launch_bytes != cost_model{}.launch_bytes) s += ", a launch costing " + detail::format_bytes(model.launch_bytes);
  s += ":";
  // The modelled shape of each tensor argument.
  const std::vector<double> ext = detail::planning::extent_values(g.nodes, P::sizes.nodes, g.exprs, g.eclass,
                                                                  P::sizes.exprs, hints, model.extent_scale);
  for (int p = 0; p < P::sizes.params; ++p) {
    if (g.params[p].kind != arg_kind::tensor) continue;
    const node& n = g.nodes[g.params[p].node];
    s += " t" + std::to_string(g.params[p].node) + " " + name(n.dt) + "[";
    for (int i = 0; i < n.rank; ++i) s += (i ? ", " : "") + detail::format_double(ext[n.shape[i]]);
    s += "]";
  }
  s += "\n";
  for (int i = 0; i < d.ngroups; ++i) {
    const plan_group& grp = d.groups[i];
    std::string exec = grp.executor >= 0 ? std::string(plan<P, Policy>::claimants::name(grp.executor)) : "fusex";
    if (grp.kind == group_kind::matmul) exec = "blas";
    s += "group " + std::to_string(i) + ": " + name(grp.kind) + " [" + exec + "], " +
         std::to_string(grp.nmembers) + (grp.nmembers == 1 ? " op" : " ops") + "\n";
    for (int k = 0; k < grp.nmembers; ++k) s += "    " + detail::node_string(g, d.members[grp.member0 + k]) + "\n";
    s += "  reads:";
    for (int k = 0; k < grp.nreads; ++k) {
      const int v = d.reads[grp.read0 + k];
      s += " t" + std::to_string(v) + " " + detail::type_string(g, g.nodes[v]);
    }
    s += "\n  writes:";
    for (int k = 0; k < grp.nwrites; ++k) {
      const int v = d.writes[grp.write0 + k];
      s += " t" + std::to_string(v) + " " + detail::type_string(g, g.nodes[v]);
    }
    s += "\n  bytes: " + detail::format_bytes(grp.bytes_read) + " read, " + detail::format_bytes(grp.bytes_written) +
         " written\n";
  }
  const double total = d.bytes_read + d.bytes_written;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", d.min_bytes > 0 ? total / d.min_bytes : 1.0);
  s += "total: " + detail::format_bytes(total) + " moved in " + std::to_string(d.ngroups) + (d.ngroups == 1 ? " launch; minimum " : " launches; minimum ") +
       detail::format_bytes(d.min_bytes) + " (ratio " + ratio + ")\n";
  return s;
}

// The cost model evaluated at real extents: bytes each group reads and
// writes for the given arguments, against the minimum (every tensor argument
// read once, every output written once).
struct traffic {
  double bytes = 0, min_bytes = 0;
  int launches = 0;
};

template <class P, class Policy, class... A>
traffic modelled_traffic(plan<P, Policy> pl, const inputs_t<A...>& in) {
  const auto& g = P::graph;
  const auto& d = pl.data;
  const auto args = bind_args(P{}, in);
  const auto env = check_inputs(g, args.data());
  auto bytes_of = [&](int v) { return static_cast<double>(env.numel(v)) * size_of(g.nodes[v].dt); };
  traffic t;
  t.launches = d.ngroups;
  for (int i = 0; i < d.ngroups; ++i) {
    for (int k = 0; k < d.groups[i].nreads; ++k) t.bytes += bytes_of(d.reads[d.groups[i].read0 + k]);
    for (int k = 0; k < d.groups[i].nwrites; ++k) t.bytes += bytes_of(d.writes[d.groups[i].write0 + k]);
  }
  bool seen[P::sizes.nodes > 0 ? P::sizes.nodes : 1] = {};
  for (int p = 0; p < P::sizes.params; ++p)
    if (g.params[p].kind == arg_kind::tensor && g.uses(g.params[p].node) > 0) t.min_bytes += bytes_of(g.params[p].node);
  for (int o = 0; o < P::sizes.outputs; ++o)
    if (!seen[g.outputs[o]]) {
      seen[g.outputs[o]] = true;
      t.min_bytes += bytes_of(g.outputs[o]);
    }
  return t;
}

}  // namespace fusex
