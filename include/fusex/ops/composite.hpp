#pragma once
// What every composite op shares: its compute dtype, the bridge between
// typed handles and the untyped ones its backward formula uses, and the
// region it records so that autodiff can find it (capture/graph.hpp).

#include <initializer_list>
#include <type_traits>

#include "../capture/dynamic.hpp"
#include "../capture/elementwise.hpp"

namespace fusex::ops::detail {

// 16-bit and f32 values compute in f32, f64 in f64.
template <class T>
using compute_type = std::conditional_t<std::is_same_v<T, double>, double, float>;
constexpr dtype compute_of(dtype d) { return d == dtype::f64 ? dtype::f64 : dtype::f32; }

template <class T, int R>
constexpr fusex::detail::dyn as_dyn(tensor<T, R> x) {
  return {x.b_, x.id_};
}
template <class T, int R>
constexpr tensor<T, R> as_tensor(fusex::detail::dyn x) {
  return {x.b, x.id};
}

// Node ids of a region's operands. A function, not a braced list: nvcc's
// front end rewrites braced arguments of templates into GNU statement
// expressions that the host compiler rejects.
struct id_list {
  int n = 0;
  std::int32_t v[4] = {};
};
template <class... I>
constexpr id_list ids(I... i) {
  static_assert(sizeof...(I) <= 4, "a region has at most four operands of a kind");
  id_list l;
  ((l.v[l.n++] = static_cast<std::int32_t>(i)), ...);
  return l;
}

constexpr void record_region(fusex::detail::builder& b, composite kind, id_list in, id_list out,
                             id_list save = id_list{}, id_list iparams = id_list{}, int flag = 0) {
  region r;
  r.kind = kind;
  r.flag = static_cast<std::int8_t>(flag);
  for (int i = 0; i < in.n; ++i) r.in[r.nin++] = in.v[i];
  for (int i = 0; i < out.n; ++i) r.out[r.nout++] = out.v[i];
  for (int i = 0; i < save.n; ++i) r.save[r.nsave++] = save.v[i];
  for (int i = 0; i < iparams.n; ++i) r.iparam[i] = iparams.v[i];
  b.regions.push_back(r);
}

// A number or a rank-0 handle (scalar<T>) as a rank-0 value of type C.
template <class C, class X, class E>
constexpr tensor<C, 0> rank0_value(const X& like, E v) {
  if constexpr (std::is_arithmetic_v<E>) return constant_like<C>(like, static_cast<double>(v));
  else return convert<C>(v);
}

}  // namespace fusex::ops::detail
