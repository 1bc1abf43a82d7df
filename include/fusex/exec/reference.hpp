#pragma once
// The reference executor: evaluates a graph prim by prim, materialising every
// intermediate. Each prim is computed in double (int64 for integers) and
// rounded to its node's dtype, so every intermediate is the best value its
// dtype can hold. It is the oracle for all other executors: simple, slow,
// obviously right.

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../capture/graph.hpp"
#include "../runtime/bind.hpp"
#include "../runtime/storage.hpp"
#include "../codegen/ops.hpp"
#include "../codegen/reduce.hpp"
#include "host_blas.hpp"

namespace fusex {

struct reference_executor {};
inline constexpr reference_executor reference{};

namespace detail::ref {

// A materialised node value: contiguous row-major; floats in `f`, integers
// and bools in `i`.
struct value {
  dtype dt = dtype::f32;
  int rank = 0;
  index_t ext[max_rank] = {};
  index_t str[max_rank] = {};
  std::vector<double> f;
  std::vector<std::int64_t> i;

  bool is_int() const { return !is_floating(dt); }
  index_t size() const {
    index_t n = 1;
    for (int k = 0; k < rank; ++k) n *= ext[k];
    return n;
  }
  void allocate(dtype d, int r, const index_t* e) {
    dt = d;
    rank = r;
    index_t s = 1;
    for (int k = r - 1; k >= 0; --k) {
      ext[k] = e[k];
      str[k] = s;
      s *= e[k];
    }
    if (is_int()) i.assign(static_cast<std::size_t>(s), 0);
    else f.assign(static_cast<std::size_t>(s), 0.0);
  }
  double getf(index_t k) const { return is_int() ? static_cast<double>(i[k]) : f[k]; }
  std::int64_t geti(index_t k) const { return is_int() ? i[k] : float_to_int(dtype::i64, f[k]); }
};

// Calls fn(idx) for every multi-index of `ext`, in row-major order.
template <class Fn>
void for_each_index(const index_t* ext, int rank, Fn&& fn) {
  index_t n = 1;
  for (int k = 0; k < rank; ++k) n *= ext[k];
  index_t idx[max_rank] = {};
  for (index_t lin = 0; lin < n; ++lin) {
    fn(idx, lin);
    for (int k = rank - 1; k >= 0; --k) {
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
}

// Offset of an elementwise operand at the result's index: rank-0 operands
// and extents of 1 broadcast.
inline index_t broadcast_offset(const value& v, const index_t* idx) {
  index_t off = 0;
  for (int k = 0; k < v.rank; ++k) off += (v.ext[k] == 1 ? 0 : idx[k]) * v.str[k];
  return off;
}

// The prims' scalar meaning comes from codegen/ops.hpp, the one definition
// every executor uses; here it is applied in double (int64 for integers)
// through tables indexed by op_kind, so a new op needs no case here.
template <class T, std::size_t... I>
constexpr auto unary_table(std::index_sequence<I...>) {
  using fn = T (*)(T);
  return std::array<fn, sizeof...(I)>{
      +[](T x) { return codegen::unary<static_cast<op_kind>(static_cast<int>(op_kind::neg) + static_cast<int>(I))>(x); }...};
}
template <class T, std::size_t... I>
constexpr auto binary_table(std::index_sequence<I...>) {
  using fn = T (*)(T, T);
  return std::array<fn, sizeof...(I)>{+[](T a, T b) {
    return static_cast<T>(codegen::binary<static_cast<op_kind>(static_cast<int>(op_kind::add) + static_cast<int>(I))>(a, b));
  }...};
}
inline constexpr std::size_t num_unary = static_cast<std::size_t>(op_kind::dgelu) - static_cast<std::size_t>(op_kind::neg) + 1;
inline constexpr std::size_t num_binary = static_cast<std::size_t>(op_kind::ge) - static_cast<std::size_t>(op_kind::add) + 1;

inline double unary_f(op_kind k, double x) {
  static constexpr auto table = unary_table<double>(std::make_index_sequence<num_unary>{});
  return table[static_cast<std::size_t>(k) - static_cast<std::size_t>(op_kind::neg)](x);
}
inline std::int64_t unary_i(op_kind k, std::int64_t x) {
  static constexpr auto table = unary_table<long long>(std::make_index_sequence<num_unary>{});
  return table[static_cast<std::size_t>(k) - static_cast<std::size_t>(op_kind::neg)](x);
}
inline double binary_f(op_kind k, double a, double b) {
  static constexpr auto table = binary_table<double>(std::make_index_sequence<num_binary>{});
  return table[static_cast<std::size_t>(k) - static_cast<std::size_t>(op_kind::add)](a, b);
}
inline std::int64_t binary_i(op_kind k, std::int64_t a, std::int64_t b) {
  static constexpr auto table = binary_table<long long>(std::make_index_sequence<num_binary>{});
  return table[static_cast<std::size_t>(k) - static_cast<std::size_t>(op_kind::add)](a, b);
}

inline void set_result(value& out, index_t k, double v) {
  if (out.is_int()) out.i[k] = float_to_int(out.dt, v);
  else out.f[k] = round_to(out.dt, v);
}
inline void set_result(value& out, index_t k, std::int64_t v) {
  if (out.is_int()) out.i[k] = wrap_to(out.dt, v);
  else out.f[k] = round_to(out.dt, static_cast<double>(v));
}

template <graph_sizes S>
class evaluator {
 public:
  evaluator(const graph<S>& g, const shape_env<S>& env, const bound_arg* args)
      : g_(g), env_(env), args_(args), vals_(static_cast<std::size_t>(S.nodes)) {}

  void run() {
    for (int id = 0; id < S.nodes; ++id) eval(id);
  }
  const value& operator[](int id) const { return vals_[id]; }

 private:
  const graph<S>& g_;
  const shape_env<S>& env_;
  const bound_arg* args_;
  std::vector<value> vals_;

  const value& arg(int id, int k) const { return vals_[g_.operand(id, k)]; }

  void eval(int id) {
    const node& n = g_.nodes[id];
    value& out = vals_[id];
    index_t ext[max_rank];
    env_.extents(id, ext);
    out.allocate(n.dt, n.rank, ext);
    switch (category(n.op)) {
      case op_category::source: source(id, out); break;
      case op_category::elementwise: elementwise(id, out); break;
      case op_category::remap: remap(id, out); break;
      case op_category::reduction: reduction(id, out); break;
      case op_category::opaque: matmul(id, out); break;
    }
  }

  void source(int id, value& out) {
    const node& n = g_.nodes[id];
    switch (n.op) {
      case op_kind::input: {
        const bound_arg& a = args_[n.slot];
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          index_t off = 0;
          for (int k = 0; k < a.rank; ++k) off += idx[k] * a.str[k];
          if (out.is_int()) out.i[lin] = load_int(a.data, a.dt, off);
          else out.f[lin] = load_double(a.data, a.dt, off);
        });
        break;
      }
      case op_kind::scalar_param: set_result(out, 0, args_[n.slot].scalar); break;
      case op_kind::constant:
      case op_kind::full:
        for (index_t k = 0; k < out.size(); ++k) set_result(out, k, n.value);
        break;
      case op_kind::index_value: set_result(out, 0, static_cast<double>(env_[n.iparam[0]])); break;
      case op_kind::iota:
        for (index_t k = 0; k < out.size(); ++k) set_result(out, k, n.value + static_cast<double>(k) * n.value2);
        break;
      default: break;
    }
  }

  void elementwise(int id, value& out) {
    const node& n = g_.nodes[id];
    // Comparisons compute in the operands' promoted type, the rest in the result's.
    dtype ct = compute_dtype(n.dt);
    if (is_comparison(n.op)) ct = compute_dtype(promote(arg(id, 0).dt, arg(id, 1).dt));
    if (n.op == op_kind::convert) ct = arg(id, 0).dt;
    const bool fp = is_floating(ct);
    // An integer operand of a float op converts to the op's float type first
    // (f32 below f64, as the fused executors and PyTorch do).
    auto getf = [&](int k, index_t o) {
      const value& x = arg(id, k);
      const double v = x.getf(o);
      return !is_floating(x.dt) && ct != dtype::f64 ? static_cast<double>(static_cast<float>(v)) : v;
    };
    for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
      index_t off[3] = {};
      for (int k = 0; k < n.nargs; ++k) off[k] = broadcast_offset(arg(id, k), idx);
      if (n.op == op_kind::convert) {
        const value& x = arg(id, 0);
        if (fp) set_result(out, lin, x.f[off[0]]);
        else set_result(out, lin, x.i[off[0]]);
      } else if (n.op == op_kind::where) {
        const bool p = arg(id, 0).i[off[0]] != 0;
        const int k = p ? 1 : 2;
        if (fp) set_result(out, lin, getf(k, off[k]));
        else set_result(out, lin, arg(id, k).geti(off[k]));
      } else if (is_unary(n.op)) {
        if (fp) set_result(out, lin, unary_f(n.op, getf(0, off[0])));
        else set_result(out, lin, unary_i(n.op, arg(id, 0).geti(off[0])));
      } else {
        if (fp) set_result(out, lin, binary_f(n.op, getf(0, off[0]), getf(1, off[1])));
        else set_result(out, lin, binary_i(n.op, arg(id, 0).geti(off[0]), arg(id, 1).geti(off[1])));
      }
    });
  }

  void copy_element(value& out, index_t to, const value& x, index_t from) {
    if (out.is_int()) out.i[to] = x.is_int() ? wrap_to(out.dt, x.i[from]) : float_to_int(out.dt, x.f[from]);
    else out.f[to] = round_to(out.dt, x.getf(from));
  }

  void remap(int id, value& out) {
    const node& n = g_.nodes[id];
    const value& x = arg(id, 0);
    switch (n.op) {
      case op_kind::broadcast_in_dim:
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          index_t off = 0;
          for (int j = 0; j < x.rank; ++j) off += (x.ext[j] == 1 ? 0 : idx[n.map[j]]) * x.str[j];
          copy_element(out, lin, x, off);
        });
        break;
      case op_kind::reshape:
        for (index_t k = 0; k < out.size(); ++k) copy_element(out, k, x, k);
        break;
      case op_kind::permute:
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          index_t off = 0;
          for (int i = 0; i < out.rank; ++i) off += idx[i] * x.str[n.map[i]];
          copy_element(out, lin, x, off);
        });
        break;
      case op_kind::slice: {
        const index_t start = env_[n.iparam[0]], step = env_[n.iparam[2]];
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          index_t off = 0;
          for (int i = 0; i < out.rank; ++i) off += (i == n.axis ? start + idx[i] * step : idx[i]) * x.str[i];
          copy_element(out, lin, x, off);
        });
        break;
      }
      case op_kind::pad: {
        const index_t low = env_[n.iparam[0]];
        const double fill = round_to(out.dt, n.value);
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          const index_t j = idx[n.axis] - low;
          if (j < 0 || j >= x.ext[n.axis]) {
            set_result(out, lin, fill);
            return;
          }
          index_t off = 0;
          for (int i = 0; i < out.rank; ++i) off += (i == n.axis ? j : idx[i]) * x.str[i];
          copy_element(out, lin, x, off);
        });
        break;
      }
      case op_kind::cat:
        for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
          index_t j = idx[n.axis];
          int k = 0;
          while (j >= arg(id, k).ext[n.axis]) j -= arg(id, k++).ext[n.axis];
          const value& xk = arg(id, k);
          index_t off = 0;
          for (int i = 0; i < out.rank; ++i) off += (i == n.axis ? j : idx[i]) * xk.str[i];
          copy_element(out, lin, xk, off);
        });
        break;
      default: break;
    }
  }

  // Reductions through the descriptors every executor uses
  // (codegen/reduce.hpp), over doubles (int64 for integers) in double.
  template <op_kind K, dtype DU, bool MeanOnly>
  void reduce_with(int id, value& out) {
    const node& n = g_.nodes[id];
    const value& x = arg(id, 0);
    const bool keep = n.flag & 1;
    const index_t len = x.ext[n.axis];
    using V = std::conditional_t<is_floating(DU), double, long long>;
    using RD = codegen::reducer<K, DU, double, MeanOnly, V>;
    for_each_index(out.ext, out.rank, [&](const index_t* idx, index_t lin) {
      index_t base = 0;
      for (int i = 0, j = 0; i < x.rank; ++i) {
        if (i == n.axis) {
          if (keep) ++j;
          continue;
        }
        base += idx[j++] * x.str[i];
      }
      const index_t step = x.str[n.axis];
      auto s = RD::identity();
      for (index_t r = 0; r < len; ++r) {
        if constexpr (is_floating(DU)) RD::add(s, x.f[base + r * step]);
        else RD::add(s, static_cast<long long>(x.i[base + r * step]));
      }
      const auto v = RD::value_of(s, len, n.value);
      if constexpr (std::is_floating_point_v<decltype(v)>) set_result(out, lin, static_cast<double>(v));
      else set_result(out, lin, static_cast<std::int64_t>(v));
    });
  }
  template <dtype DU>
  void reduction_of(int id, value& out) {
    const node& n = g_.nodes[id];
    if (n.op == op_kind::sum) reduce_with<op_kind::sum, DU, false>(id, out);
    else if (n.op == op_kind::amax) reduce_with<op_kind::amax, DU, false>(id, out);
    else if constexpr (is_floating(DU)) {
      if (n.flag & 2) reduce_with<op_kind::var_mean, DU, true>(id, out);
      else reduce_with<op_kind::var_mean, DU, false>(id, out);
    }
  }
  void reduction(int id, value& out) {
    switch (arg(id, 0).dt) {
      case dtype::b8: reduction_of<dtype::b8>(id, out); break;
      case dtype::i32: reduction_of<dtype::i32>(id, out); break;
      case dtype::i64: reduction_of<dtype::i64>(id, out); break;
      case dtype::f16: reduction_of<dtype::f16>(id, out); break;
      case dtype::bf16: reduction_of<dtype::bf16>(id, out); break;
      case dtype::f32: reduction_of<dtype::f32>(id, out); break;
      case dtype::f64: reduction_of<dtype::f64>(id, out); break;
    }
  }

  void matmul(int id, value& out) {
    const value& a = arg(id, 0);
    const value& b = arg(id, 1);
    const int r = out.rank;
    const index_t m = out.ext[r - 2], nn = out.ext[r - 1], k = a.ext[a.rank - 1];
    std::vector<double> c(static_cast<std::size_t>(m * nn));
    for_each_index(out.ext, r - 2, [&](const index_t* idx, index_t lin) {
      index_t oa = 0, ob = 0;
      for (int i = 0; i < r - 2; ++i) {
        oa += (a.ext[i] == 1 ? 0 : idx[i]) * a.str[i];
        if (b.rank == r) ob += (b.ext[i] == 1 ? 0 : idx[i]) * b.str[i];
      }
      host_gemm<double>(m, nn, k, a.f.data() + oa, k, b.f.data() + ob, nn, c.data(), nn);
      for (index_t e = 0; e < m * nn; ++e) out.f[lin * m * nn + e] = round_to(out.dt, c[e]);
    });
  }
};

}  // namespace detail::ref

// Runs program P with the reference executor, writing into `out`.
template <program_like P, class... A, class... O>
void run(P p, reference_executor, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  const auto args = bind_args(p, in);
  const auto outs = bind_results(p, out);
  const auto env = check_inputs(P::graph, args.data());
  static constexpr auto in_place = detail::in_place_table(P::graph);
  check_outputs(P::graph, env, args.data(), outs.data(), in_place.data());
  detail::ref::evaluator<P::sizes> ev(P::graph, env, args.data());
  ev.run();
  for (int o = 0; o < P::sizes.outputs; ++o) {
    const detail::ref::value& v = ev[P::graph.outputs[o]];
    const bound_arg& dst = outs[o];
    detail::ref::for_each_index(v.ext, v.rank, [&](const index_t* idx, index_t lin) {
      index_t off = 0;
      for (int k = 0; k < v.rank; ++k) off += idx[k] * dst.str[k];
      void* data = const_cast<void*>(dst.data);
      if (v.is_int()) detail::store_int(data, dst.dt, off, v.i[lin]);
      else detail::store_double(data, dst.dt, off, v.f[lin]);
    });
  }
}

}  // namespace fusex
