#pragma once
// Binding run-time arguments to a traced program, and checking them: every
// extent expression is evaluated from the arguments, then every node's
// requirements are checked, before any executor reads or writes memory.

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../capture/graph.hpp"
#include "../capture/trace.hpp"
#include "../core/error.hpp"
#include "in_place.hpp"
#include "view.hpp"

namespace fusex {

// One argument or output, type-erased. Tensor data may live on the host or
// the device; the binding layer never dereferences it.
struct bound_arg {
  arg_kind kind = arg_kind::tensor;
  dtype dt = dtype::f32;
  int rank = 0;
  const void* data = nullptr;
  index_t ext[max_rank] = {};
  index_t str[max_rank] = {};
  double scalar = 0;
  index_t ivalue = 0;

  index_t size() const {
    index_t n = 1;
    for (int i = 0; i < rank; ++i) n *= ext[i];
    return n;
  }
};

namespace detail {
template <class T, int R>
bound_arg bind_view(const view<T, R>& v) {
  bound_arg a;
  a.kind = arg_kind::tensor;
  a.dt = dtype_v<std::remove_const_t<T>>;
  a.rank = R;
  a.data = v.data();
  for (int i = 0; i < R; ++i) {
    a.ext[i] = v.extent(i);
    a.str[i] = v.stride(i);
  }
  return a;
}

template <class X>
struct view_traits {
  static constexpr bool is_view = false;
};
template <class T, int R>
struct view_traits<view<T, R>> {
  static constexpr bool is_view = true;
  static constexpr bool is_const = std::is_const_v<T>;
  using value_type = std::remove_const_t<T>;
  static constexpr int rank = R;
};

// Normalises one input: views and host tensors become const views, numbers stay.
template <class A>
auto input_value(const A& a) {
  if constexpr (view_traits<A>::is_view) {
    return view<const typename view_traits<A>::value_type, view_traits<A>::rank>(a);
  } else if constexpr (requires { a.as_view(); }) {
    return a.as_view();
  } else {
    static_assert(std::is_arithmetic_v<A>,
                  "fusex: an input must be a fusex::view, a fusex::host_tensor or a number");
    return a;
  }
}
template <class A>
auto output_value(A&& a) {
  using D = std::remove_cvref_t<A>;
  if constexpr (view_traits<D>::is_view) {
    static_assert(!view_traits<D>::is_const, "fusex: an output view must have mutable elements");
    return a;
  } else {
    static_assert(requires { a.as_view(); }, "fusex: an output must be a fusex::view or a fusex::host_tensor");
    static_assert(!std::is_const_v<std::remove_reference_t<A>>, "fusex: an output host_tensor must not be const");
    return a.as_view();
  }
}
}  // namespace detail

template <class... A>
struct inputs_t {
  std::tuple<A...> values;
};
template <class... O>
struct outputs_t {
  std::tuple<O...> values;
};

// The arguments of a run, in the traced function's parameter order.
template <class... A>
auto inputs(const A&... a) {
  return inputs_t<decltype(detail::input_value(a))...>{{detail::input_value(a)...}};
}
// Where a run writes its results, in the traced function's return order.
template <class... O>
auto outputs(O&&... o) {
  return outputs_t<decltype(detail::output_value(std::forward<O>(o)))...>{{detail::output_value(std::forward<O>(o))...}};
}

namespace detail {

template <class P, class A>
constexpr bool arg_matches() {
  if constexpr (std::is_same_v<P, index>) {
    return std::is_integral_v<A> && !std::is_same_v<A, bool>;
  } else if constexpr (arg_traits<P>::kind == arg_kind::scalar) {
    return std::is_arithmetic_v<A>;
  } else if constexpr (view_traits<A>::is_view) {
    return std::is_same_v<typename view_traits<A>::value_type, typename P::value_type> &&
           view_traits<A>::rank == P::rank;
  } else {
    return false;
  }
}

// Instantiated only on a mismatch so that the compiler's note names the
// argument position, the expected handle type and the given type.
template <int Position, class Expected, class Given>
constexpr bool argument_matches_parameter() {
  static_assert(arg_matches<Expected, Given>(),
                "fusex::run: an input does not match the traced function's parameter (see the position, "
                "expected and given types below): tensor<T, R> takes view<const T, R> / host_tensor<T, R>, "
                "scalar<T> a number, index an integer");
  return true;
}

template <class P, class A>
bound_arg bind_one(const A& a) {
  if constexpr (std::is_same_v<P, index>) {
    bound_arg b;
    b.kind = arg_kind::index;
    b.dt = dtype::i64;
    b.ivalue = static_cast<index_t>(a);
    return b;
  } else if constexpr (arg_traits<P>::kind == arg_kind::scalar) {
    bound_arg b;
    b.kind = arg_kind::scalar;
    b.dt = P::dt;
    b.scalar = static_cast<double>(a);
    return b;
  } else {
    return bind_view(a);
  }
}

template <class... P, class... A, std::size_t... I>
std::array<bound_arg, sizeof...(P)> bind_inputs(type_list<P...>, const std::tuple<A...>& t,
                                                std::index_sequence<I...>) {
  static_assert(sizeof...(P) == sizeof...(A),
                "fusex::run: the number of inputs differs from the traced function's parameter count");
  if constexpr (sizeof...(P) == sizeof...(A)) {
    (argument_matches_parameter<static_cast<int>(I), P, A>(), ...);
    return {bind_one<P>(std::get<I>(t))...};
  } else {
    return {};
  }
}

template <class R, class... O>
struct output_check;

template <class T, int R, class O>
constexpr bool output_matches() {
  if constexpr (view_traits<O>::is_view)
    return std::is_same_v<typename view_traits<O>::value_type, T> && view_traits<O>::rank == R;
  else
    return false;
}
template <class X>
struct output_types {
  using type = type_list<X>;
};
template <class T>
struct output_types<scalar<T>> {
  using type = type_list<tensor<T, 0>>;
};
template <class... X>
struct output_types<std::tuple<X...>> {
  using type = type_list<std::remove_cvref_t<X>...>;
};

template <int Position, class Expected, class Given>
constexpr bool output_matches_result() {
  static_assert(output_matches<typename Expected::value_type, Expected::rank, Given>(),
                "fusex::run: an output does not match the traced function's result (see the position, "
                "expected and given types below): tensor<T, R> takes a view<T, R> or host_tensor<T, R>");
  return true;
}

template <class... X, class... O, std::size_t... I>
std::array<bound_arg, sizeof...(X)> bind_outputs(type_list<X...>, const std::tuple<O...>& t,
                                                 std::index_sequence<I...>) {
  static_assert(sizeof...(X) == sizeof...(O),
                "fusex::run: the number of outputs differs from the traced function's results");
  if constexpr (sizeof...(X) == sizeof...(O)) {
    (output_matches_result<static_cast<int>(I), X, O>(), ...);
    return {bind_view(std::get<I>(t))...};
  } else {
    return {};
  }
}

}  // namespace detail

// Type-checked binding of a run's inputs to program P, in parameter order.
template <program_like P, class... A>
std::array<bound_arg, P::sizes.params> bind_args(P, const inputs_t<A...>& in) {
  return detail::bind_inputs(typename P::arg_types{}, in.values, std::index_sequence_for<A...>{});
}

// Output handle types of program P, as a detail::type_list of tensor<T, R>.
template <class P>
using result_types = typename detail::output_types<typename P::result_type>::type;

// Type-checked binding of a run's outputs to program P, in result order.
template <program_like P, class... O>
std::array<bound_arg, P::sizes.outputs> bind_results(P, const outputs_t<O...>& out) {
  return detail::bind_outputs(result_types<P>{}, out.values, std::index_sequence_for<O...>{});
}

// ---- run-time shapes ------------------------------------------------------

namespace detail {
inline std::string dims_string(const index_t* e, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + "]";
}
inline std::string node_label(op_kind k, int id) {
  return std::string("fusex::") + name(k) + " (t" + std::to_string(id) + ")";
}
}  // namespace detail

// Concrete values of every expression of a graph for one set of arguments.
template <graph_sizes S>
class shape_env {
 public:
  shape_env(const graph<S>& g, const bound_arg* args) : g_(&g), v_(static_cast<std::size_t>(S.exprs)) {
    for (int e = 0; e < S.exprs; ++e) {
      const expr& x = g.exprs[e];
      index_t r = 0;
      switch (x.kind) {
        case expr_kind::constant: r = x.value; break;
        case expr_kind::param: r = args[x.value].ivalue; break;
        case expr_kind::extent: r = args[x.a].ext[x.b]; break;
        case expr_kind::add: r = v_[x.a] + v_[x.b]; break;
        case expr_kind::sub: r = v_[x.a] - v_[x.b]; break;
        case expr_kind::mul: r = v_[x.a] * v_[x.b]; break;
        case expr_kind::div:
        case expr_kind::mod:
          if (v_[x.b] == 0)
            throw shape_error("fusex: an index expression divides by zero (check the index arguments)");
          r = x.kind == expr_kind::div ? v_[x.a] / v_[x.b] : v_[x.a] % v_[x.b];
          break;
      }
      v_[e] = r;
    }
  }
  index_t operator[](int e) const { return v_[e]; }
  index_t extent(int n, int axis) const { return v_[g_->nodes[n].shape[axis]]; }
  void extents(int n, index_t* out) const {
    for (int i = 0; i < g_->nodes[n].rank; ++i) out[i] = extent(n, i);
  }
  index_t numel(int n) const {
    index_t c = 1;
    for (int i = 0; i < g_->nodes[n].rank; ++i) c *= extent(n, i);
    return c;
  }
  std::string dims(int n) const {
    index_t e[max_rank];
    extents(n, e);
    return detail::dims_string(e, g_->nodes[n].rank);
  }

 private:
  const graph<S>* g_;
  std::vector<index_t> v_;
};

namespace detail {

// The requirements of one node on its operands' extents and parameters.
template <graph_sizes S>
void check_node(const graph<S>& g, const shape_env<S>& env, int id) {
  const node& n = g.nodes[id];
  const std::string who = node_label(n.op, id);
  auto operand = [&](int k) { return g.operand(id, k); };
  switch (category(n.op)) {
    case op_category::elementwise:
      for (int k = 0; k < n.nargs; ++k) {
        const int a = operand(k);
        if (g.nodes[a].rank == 0) continue;
        for (int i = 0; i < n.rank; ++i) {
          const index_t ea = env.extent(a, i);
          if (ea != env.extent(id, i) && !(g.is_const(g.nodes[a].shape[i], 1)))
            throw shape_error(who + ": operand t" + std::to_string(a) + " has extents " + env.dims(a) +
                              " but the result has " + env.dims(id) + " (mismatch on axis " + std::to_string(i) +
                              "; only extents that are statically 1 broadcast)");
        }
      }
      break;
    case op_category::remap: {
      const int a = operand(0);
      switch (n.op) {
        case op_kind::broadcast_in_dim:
          for (int j = 0; j < g.nodes[a].rank; ++j) {
            const index_t ein = env.extent(a, j), eout = env.extent(id, n.map[j]);
            if (ein != eout && !g.is_const(g.nodes[a].shape[j], 1))
              throw shape_error(who + ": input extent " + std::to_string(ein) + " on axis " + std::to_string(j) +
                                " cannot broadcast to " + std::to_string(eout) + " on output axis " +
                                std::to_string(n.map[j]) + " (input " + env.dims(a) + ", output " + env.dims(id) +
                                "; only extents that are statically 1 broadcast)");
          }
          break;
        case op_kind::reshape:
          if (env.numel(a) != env.numel(id))
            throw shape_error(who + ": cannot reshape " + env.dims(a) + " (" + std::to_string(env.numel(a)) +
                              " elements) to " + env.dims(id) + " (" + std::to_string(env.numel(id)) + " elements)");
          break;
        case op_kind::slice: {
          const index_t start = env[n.iparam[0]], stop = env[n.iparam[1]], step = env[n.iparam[2]];
          const index_t ext = env.extent(a, n.axis);
          if (start < 0 || stop < start || stop > ext || step < 1)
            throw shape_error(who + ": bounds start=" + std::to_string(start) + " stop=" + std::to_string(stop) +
                              " step=" + std::to_string(step) + " are out of range for extent " + std::to_string(ext) +
                              " on axis " + std::to_string(n.axis) + " (need 0 <= start <= stop <= extent, step >= 1)");
          break;
        }
        case op_kind::pad: {
          const index_t lo = env[n.iparam[0]], hi = env[n.iparam[1]];
          if (lo < 0 || hi < 0)
            throw shape_error(who + ": pad widths low=" + std::to_string(lo) + " high=" + std::to_string(hi) +
                              " must be >= 0");
          break;
        }
        case op_kind::cat:
          for (int k = 1; k < n.nargs; ++k)
            for (int i = 0; i < n.rank; ++i)
              if (i != n.axis && env.extent(operand(k), i) != env.extent(operand(0), i))
                throw shape_error(who + ": operand " + std::to_string(k) + " (t" + std::to_string(operand(k)) +
                                  ") has extents " + env.dims(operand(k)) + " but operand 0 has " + env.dims(operand(0)) +
                                  "; they may differ only on axis " + std::to_string(n.axis));
          break;
        default: break;
      }
      break;
    }
    case op_category::opaque: {  // matmul
      const int a = operand(0), b = operand(1);
      const int ra = g.nodes[a].rank, rb = g.nodes[b].rank;
      if (env.extent(a, ra - 1) != env.extent(b, rb - 2))
        throw shape_error(who + ": inner extents differ: a is " + env.dims(a) + ", b is " + env.dims(b));
      if (rb == ra)
        for (int i = 0; i < ra - 2; ++i) {
          const index_t ea = env.extent(a, i), eb = env.extent(b, i);
          if (ea != eb && !g.is_const(g.nodes[a].shape[i], 1) && !g.is_const(g.nodes[b].shape[i], 1))
            throw shape_error(who + ": batch extents differ on axis " + std::to_string(i) + ": a is " + env.dims(a) +
                              ", b is " + env.dims(b));
        }
      break;
    }
    default: break;
  }
  // After the op's own checks, which say more about how a bad extent arose.
  for (int i = 0; i < n.rank; ++i)
    if (env.extent(id, i) < 0)
      throw shape_error(who + ": negative extent " + std::to_string(env.extent(id, i)) + " on axis " +
                        std::to_string(i) + " (extents " + env.dims(id) + ")");
}

inline void check_view(const bound_arg& a, const std::string& who) {
  for (int i = 0; i < a.rank; ++i) {
    if (a.ext[i] < 0)
      throw shape_error(who + ": negative extent on axis " + std::to_string(i) + " (extents " +
                        dims_string(a.ext, a.rank) + ")");
    if (a.str[i] < 0)
      throw shape_error(who + ": negative stride on axis " + std::to_string(i) + " (strides " +
                        dims_string(a.str, a.rank) + ")");
  }
  if (a.data == nullptr && a.size() > 0)
    throw argument_error(who + ": null data for " + std::to_string(a.size()) + " elements");
  const auto addr = reinterpret_cast<std::uintptr_t>(a.data);
  if (a.size() > 0 && addr % static_cast<std::uintptr_t>(size_of(a.dt)) != 0)
    throw shape_error(who + ": data at " + std::to_string(addr) + " is not aligned to its " + name(a.dt) + " elements (" +
                      std::to_string(size_of(a.dt)) + " bytes)");
}

// Byte range [lo, hi) spanned by a view; empty for zero elements.
inline void byte_range(const bound_arg& a, std::uintptr_t& lo, std::uintptr_t& hi) {
  lo = hi = reinterpret_cast<std::uintptr_t>(a.data);
  if (a.size() == 0) return;
  index_t last = 0;
  for (int i = 0; i < a.rank; ++i) last += (a.ext[i] - 1) * a.str[i];
  hi = lo + static_cast<std::uintptr_t>((last + 1) * size_of(a.dt));
}

// Element offsets of a view are distinct when, ordered by stride, each
// stride steps over everything the smaller ones span.
inline bool has_distinct_elements(const bound_arg& a) {
  int order[max_rank];
  int n = 0;
  for (int i = 0; i < a.rank; ++i)
    if (a.ext[i] > 1) order[n++] = i;
  for (int i = 1; i < n; ++i)  // insertion sort: at most 8 axes
    for (int j = i; j > 0 && a.str[order[j]] < a.str[order[j - 1]]; --j) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  index_t span = 1;
  for (int k = 0; k < n; ++k) {
    if (a.str[order[k]] < span) return false;
    span = a.str[order[k]] * a.ext[order[k]];
  }
  return true;
}

// The name of operand k of a composite, in the order its region records them.
constexpr const char* composite_operand(composite c, int k) {
  constexpr const char* ln[] = {"x", "weight", "bias", "eps"};
  constexpr const char* rms[] = {"x", "weight", "eps"};
  constexpr const char* rope[] = {"x", "cos", "sin"};
  constexpr const char* qkv[] = {"qkv", "cos", "sin"};
  switch (c) {
    case composite::gelu:
    case composite::gelu_tanh: return "x";
    case composite::silu: return "a";
    case composite::swiglu: return k == 0 ? "a" : "b";
    case composite::layer_norm: return ln[k];
    case composite::rms_norm: return rms[k];
    case composite::rope: return rope[k];
    case composite::qkv_rope: return qkv[k];
  }
  return "?";
}

// The outermost composite op (the one the user called) whose prims include
// node id: reached from one of its operands and reaching one of its
// results. -1 if id belongs to none.
template <graph_sizes S>
int composite_of(const graph<S>& g, int id) {
  int found = -1;
  for (int r = 0; r < S.regions; ++r) {
    const region& rg = g.regions[r];
    std::vector<char> from(static_cast<std::size_t>(S.nodes), 0), to(static_cast<std::size_t>(S.nodes), 0);
    for (int k = 0; k < rg.nin; ++k)
      if (rg.in[k] >= 0) from[rg.in[k]] = 1;
    for (int n = 0; n < S.nodes; ++n)
      for (int k = 0; k < g.nodes[n].nargs && !from[n]; ++k) from[n] = from[g.operand(n, k)];
    for (int k = 0; k < rg.nout; ++k)
      if (rg.out[k] >= 0) to[rg.out[k]] = 1;
    for (int n = S.nodes - 1; n >= 0; --n)
      if (to[n])
        for (int k = 0; k < g.nodes[n].nargs; ++k) to[g.operand(n, k)] = 1;
    bool operand = false;
    for (int k = 0; k < rg.nin; ++k) operand = operand || rg.in[k] == id;
    // regions are recorded after their inner ones: the last that holds id is the outermost
    if (from[id] && to[id] && !operand) found = r;
  }
  return found;
}

// A node's shape error inside a composite op, restated in the op's terms
// first: "fusex::ops::layer_norm: x [2, 64], weight [63], bias [64]: " and
// then the prim's own message.
template <graph_sizes S>
[[noreturn]] void rethrow_in_composite(const graph<S>& g, const shape_env<S>& env, int id, const shape_error& e) {
  const int r = composite_of(g, id);
  if (r < 0) throw e;
  const region& rg = g.regions[r];
  std::string s = std::string("fusex::ops::") + name(rg.kind) + ":";
  bool first = true;
  for (int k = 0; k < rg.nin; ++k) {
    if (rg.in[k] < 0 || g.nodes[rg.in[k]].rank == 0) continue;  // eps and other numbers: no extents
    s += std::string(first ? " " : ", ") + composite_operand(rg.kind, k) + " " + env.dims(rg.in[k]);
    first = false;
  }
  if (rg.kind == composite::qkv_rope || rg.kind == composite::rope) {
    const char* params[] = {"n_head", "n_query_groups", "head_size", "n_elem"};
    for (int k = 0; k < region::max_iparam; ++k)
      if (rg.iparam[k] >= 0)
        s += std::string(", ") + (rg.kind == composite::rope ? "n_elem" : params[k]) + " " +
             std::to_string(env[rg.iparam[k]]);
  }
  throw shape_error(s + " (inside it: " + e.what() + ")");
}

}  // namespace detail

// Evaluates extents from the arguments and checks every argument and node.
// Throws shape_error / argument_error naming the op (or argument) and values.
template <graph_sizes S>
shape_env<S> check_inputs(const graph<S>& g, const bound_arg* args) {
  for (int p = 0; p < S.params; ++p)
    if (args[p].kind == arg_kind::tensor)
      detail::check_view(args[p], "fusex::run: argument " + std::to_string(p) + " (t" +
                                      std::to_string(g.params[p].node) + ")");
  // Extents the trace fixed (fusex::fixed_extents) are constants of the
  // program: the arguments must have them.
  for (int p = 0; p < S.params; ++p) {
    const arg_info& a = g.params[p];
    if (a.kind == arg_kind::index && a.fixed >= 0 && args[p].ivalue != a.fixed)
      throw shape_error("fusex::run: argument " + std::to_string(p) + " (an index) is fixed at " +
                        std::to_string(a.fixed) + " (a constant of the trace, fusex::fixed_extents), got " +
                        std::to_string(args[p].ivalue));
    if (a.kind != arg_kind::tensor || a.node < 0) continue;
    const node& n = g.nodes[a.node];
    for (int i = 0; i < n.rank && i < args[p].rank; ++i) {
      const expr& e = g.exprs[n.shape[i]];
      if (e.kind == expr_kind::constant && args[p].ext[i] != e.value)
        throw shape_error("fusex::run: argument " + std::to_string(p) + " (t" + std::to_string(a.node) + "): axis " +
                          std::to_string(i) + " is fixed at " + std::to_string(e.value) +
                          " (a constant of the trace, fusex::fixed_extents), got " + std::to_string(args[p].ext[i]) +
                          " (extents " + detail::dims_string(args[p].ext, args[p].rank) + ")");
    }
  }
  shape_env<S> env(g, args);
  // An argument declared with another value's extents (a cotangent, a saved
  // value of a backward program) must have them.
  for (int p = 0; p < S.params; ++p) {
    const int n = g.params[p].node;
    if (args[p].kind != arg_kind::tensor || n < 0) continue;
    for (int i = 0; i < args[p].rank; ++i)
      if (args[p].ext[i] != env.extent(n, i))
        throw shape_error("fusex::run: argument " + std::to_string(p) + " (t" + std::to_string(n) +
                          "): expected extents " + env.dims(n) + ", got " +
                          detail::dims_string(args[p].ext, args[p].rank));
  }
  for (int i = 0; i < S.nodes; ++i) {
    try {
      detail::check_node(g, env, i);
    } catch (const shape_error& e) {
      detail::rethrow_in_composite(g, env, i, e);
    }
  }
  return env;
}

// Checks the output views: extents, self-overlap, and aliasing with the
// arguments or with each other.
// in_place[o * params + p] (or null: never) says output o may be written
// over argument p when the two views are the same memory (in_place.hpp).
template <graph_sizes S>
void check_outputs(const graph<S>& g, const shape_env<S>& env, const bound_arg* args, const bound_arg* outs,
                   const bool* in_place = nullptr) {
  for (int o = 0; o < S.outputs; ++o) {
    const std::string who = "fusex::run: output " + std::to_string(o) + " (t" + std::to_string(g.outputs[o]) + ")";
    detail::check_view(outs[o], who);
    const int n = g.outputs[o];
    for (int i = 0; i < outs[o].rank; ++i)
      if (outs[o].ext[i] != env.extent(n, i))
        throw shape_error(who + ": expected extents " + env.dims(n) + ", got " +
                          detail::dims_string(outs[o].ext, outs[o].rank));
    if (outs[o].size() > 0 && !detail::has_distinct_elements(outs[o]))
      throw shape_error(who + ": the view's strides " + detail::dims_string(outs[o].str, outs[o].rank) +
                        " make elements overlap");
    std::uintptr_t lo, hi;
    detail::byte_range(outs[o], lo, hi);
    auto overlaps = [&](const bound_arg& b) {
      std::uintptr_t l2, h2;
      detail::byte_range(b, l2, h2);
      return lo < hi && l2 < h2 && lo < h2 && l2 < hi;
    };
    auto same_view = [&](const bound_arg& b) {
      if (b.data != outs[o].data || b.dt != outs[o].dt || b.rank != outs[o].rank) return false;
      for (int i = 0; i < b.rank; ++i)
        if (b.ext[i] != outs[o].ext[i] || (b.ext[i] > 1 && b.str[i] != outs[o].str[i])) return false;
      return true;
    };
    for (int p = 0; p < S.params; ++p)
      if (args[p].kind == arg_kind::tensor && overlaps(args[p])) {
        const bool allowed = in_place && in_place[o * S.params + p];
        if (allowed && same_view(args[p])) continue;
        throw argument_error(who + " overlaps argument " + std::to_string(p) +
                             (allowed ? "; in place, it must be the same view (same data, extents and strides)"
                                      : "; outputs must not alias inputs or each other, except in place over an "
                                        "argument that only elementwise ops read (docs/errors.md)"));
      }
    for (int q = 0; q < o; ++q)
      if (overlaps(outs[q]))
        throw argument_error(who + " overlaps output " + std::to_string(q) +
                             "; outputs must not alias inputs or each other");
  }
}

}  // namespace fusex
