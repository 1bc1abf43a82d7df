#pragma once
// The reference executor: evaluates a graph prim by prim, materialising every
// intermediate. Each prim is computed in double (int64 for integers) and
// rounded to its node's dtype, so every intermediate is the best value its
// dtype can hold. It is the oracle for all other executors: simple, slow,
// obviously right.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../capture/graph.hpp"
#include "../runtime/bind.hpp"
#include "../runtime/storage.hpp"
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

inline double unary_f(op_kind k, double x) {
  switch (k) {
    case op_kind::neg: return -x;
    case op_kind::abs: return std::fabs(x);
    case op_kind::exp: return std::exp(x);
    case op_kind::exp2: return std::exp2(x);
    case op_kind::log: return std::log(x);
    case op_kind::log1p: return std::log1p(x);
    case op_kind::sqrt: return std::sqrt(x);
    case op_kind::rsqrt: return 1.0 / std::sqrt(x);
    case op_kind::reciprocal: return 1.0 / x;
    case op_kind::erf: return std::erf(x);
    case op_kind::tanh: return std::tanh(x);
    case op_kind::sin: return std::sin(x);
    case op_kind::cos: return std::cos(x);
    case op_kind::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    default: return x;
  }
}

inline std::int64_t unary_i(op_kind k, std::int64_t x) {
  const std::uint64_t u = static_cast<std::uint64_t>(x);
  switch (k) {
    case op_kind::neg: return static_cast<std::int64_t>(0 - u);
    case op_kind::abs: return x < 0 ? static_cast<std::int64_t>(0 - u) : x;
    default: return x;
  }
}

inline double binary_f(op_kind k, double a, double b) {
  switch (k) {
    case op_kind::add: return a + b;
    case op_kind::sub: return a - b;
    case op_kind::mul: return a * b;
    case op_kind::div: return a / b;
    case op_kind::pow: return std::pow(a, b);
    case op_kind::maximum: return (std::isnan(a) || std::isnan(b)) ? std::nan("") : (a > b ? a : b);
    case op_kind::minimum: return (std::isnan(a) || std::isnan(b)) ? std::nan("") : (a < b ? a : b);
    case op_kind::eq: return a == b;
    case op_kind::ne: return a != b;
    case op_kind::lt: return a < b;
    case op_kind::le: return a <= b;
    case op_kind::gt: return a > b;
    case op_kind::ge: return a >= b;
    default: return 0;
  }
}

inline std::int64_t ipow(std::int64_t base, std::int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  std::uint64_t r = 1, b = static_cast<std::uint64_t>(base);
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<std::int64_t>(r);
}

inline std::int64_t binary_i(op_kind k, std::int64_t a, std::int64_t b) {
  const std::uint64_t ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  switch (k) {
    case op_kind::add: return static_cast<std::int64_t>(ua + ub);
    case op_kind::sub: return static_cast<std::int64_t>(ua - ub);
    case op_kind::mul: return static_cast<std::int64_t>(ua * ub);
    case op_kind::div:  // truncating; x / 0 is defined as 0
      if (b == 0) return 0;
      if (b == -1) return static_cast<std::int64_t>(0 - ua);
      return a / b;
    case op_kind::pow: return ipow(a, b);
    case op_kind::maximum: return a > b ? a : b;
    case op_kind::minimum: return a < b ? a : b;
    case op_kind::eq: return a == b;
    case op_kind::ne: return a != b;
    case op_kind::lt: return a < b;
    case op_kind::le: return a <= b;
    case op_kind::gt: return a > b;
    case op_kind::ge: return a >= b;
    default: return 0;
  }
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
        if (fp) set_result(out, lin, arg(id, k).getf(off[k]));
        else set_result(out, lin, arg(id, k).geti(off[k]));
      } else if (is_unary(n.op)) {
        if (fp) set_result(out, lin, unary_f(n.op, arg(id, 0).getf(off[0])));
        else set_result(out, lin, unary_i(n.op, arg(id, 0).geti(off[0])));
      } else {
        if (fp) set_result(out, lin, binary_f(n.op, arg(id, 0).getf(off[0]), arg(id, 1).getf(off[1])));
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

  void reduction(int id, value& out) {
    const node& n = g_.nodes[id];
    const value& x = arg(id, 0);
    const bool keep = n.flag & 1;
    const index_t len = x.ext[n.axis];
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
      if (n.op == op_kind::sum) {
        if (x.is_int()) {
          std::uint64_t s = 0;
          for (index_t r = 0; r < len; ++r) s += static_cast<std::uint64_t>(x.i[base + r * step]);
          set_result(out, lin, static_cast<std::int64_t>(s));
        } else {
          double s = 0;
          for (index_t r = 0; r < len; ++r) s += x.f[base + r * step];
          set_result(out, lin, s);
        }
      } else if (n.op == op_kind::amax) {
        if (x.is_int()) {
          std::int64_t m = x.dt == dtype::i32 ? std::numeric_limits<std::int32_t>::min()
                           : x.dt == dtype::b8 ? 0
                                               : std::numeric_limits<std::int64_t>::min();
          for (index_t r = 0; r < len; ++r) m = std::max(m, x.i[base + r * step]);
          set_result(out, lin, m);
        } else {
          double m = -std::numeric_limits<double>::infinity();
          for (index_t r = 0; r < len; ++r) {
            const double v = x.f[base + r * step];
            if (std::isnan(v) || v > m) m = v;
            if (std::isnan(m)) break;
          }
          set_result(out, lin, m);
        }
      } else {  // var_mean, two-pass in double
        double s = 0;
        for (index_t r = 0; r < len; ++r) s += x.f[base + r * step];
        const double mean = s / static_cast<double>(len);
        if (n.flag & 2) {
          set_result(out, lin, mean);
        } else {
          double q = 0;
          for (index_t r = 0; r < len; ++r) {
            const double d = x.f[base + r * step] - mean;
            q += d * d;
          }
          set_result(out, lin, q / (static_cast<double>(len) - n.value));
        }
      }
    });
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
  check_outputs(P::graph, env, args.data(), outs.data());
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
