#pragma once
// explain(plan): a readable account of a plan, one block per group with its
// executor, ops, reads, writes and modelled bytes, and totals against the
// minimum (each program input read once, each output written once).
//
//   std::cout << fusex::explain(plan);

#include <cstdio>
#include <string>

#include "../capture/print.hpp"
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
  std::string s = "# fusex plan: " + std::to_string(d.ngroups) + (d.ngroups == 1 ? " kernel" : " kernels") +
                  " for " + std::to_string(P::sizes.nodes) + " nodes (extents modelled as " +
                  detail::format_double(cost_model{}.nominal_extent) + ")\n";
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

}  // namespace fusex
