#pragma once
// fusex's Pythia and LLaMA blocks against litgpt's own Block: the output and
// every gradient, in f32 and bf16, for pythia-14m, pythia-70m and a GQA
// LLaMA-family config at B 2, T 37, with litgpt's current qkv layout; and
// the per-group layout against litgpt 0.5.4 (data: tools/litgpt_reference.py).
//
// A tensor passes when its largest error, relative to its largest magnitude,
// is within the dtype's tolerance (brief: f32 1.3e-6, bf16 1.6e-2) or within
// twice litgpt's own error in that dtype (litgpt run in f32 or bf16 against
// its float64 result; both see the same rounded inputs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../support.hpp"
#include "blocks/block_programs.hpp"
#include "litgpt_data.hpp"

namespace {

namespace fx = fusex;
using litgpt_data::reference;
using litgpt_data::stored;
using fx::ops::qkv_layout;

template <class T, int R>
fx::host_tensor<T, R> tensor_of(const std::vector<int>& shape, const std::vector<float>& v, bool transpose = false) {
  fx::extents_array<R> e{};
  for (int i = 0; i < R; ++i) e[i] = shape[static_cast<std::size_t>(transpose ? R - 1 - i : i)];
  fx::host_tensor<T, R> t(e);
  auto out = t.values();
  if constexpr (R == 2) {
    if (transpose) {  // torch's (out, in) as fusex's (in, out)
      const std::size_t rows = shape[0], cols = shape[1];
      for (std::size_t o = 0; o < rows; ++o)
        for (std::size_t i = 0; i < cols; ++i) out[i * rows + o] = fxt::from_double<T>(v[o * cols + i]);
      return t;
    }
  }
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = fxt::from_double<T>(v[i]);
  return t;
}

// max |got - ref| / max |ref|, got in fusex's layout (transposed for weights).
template <class HT>
double scaled_error(const HT& got, const stored& ref, bool transposed) {
  REQUIRE(static_cast<std::size_t>(got.size()) == ref.values.size());
  double err = 0, scale = 0;
  const auto g = got.values();
  const std::size_t rows = ref.shape.size() == 2 ? ref.shape[0] : 1, cols = ref.shape.size() == 2 ? ref.shape[1] : 1;
  for (std::size_t k = 0; k < ref.values.size(); ++k) {
    const std::size_t at = transposed ? (k % cols) * rows + k / cols : k;
    const double r = ref.values[k], v = fxt::to_double(g[at]);
    if (!std::isfinite(v)) return INFINITY;
    err = std::max(err, std::fabs(v - r));
    scale = std::max(scale, std::fabs(r));
  }
  return err / std::max(scale, 1e-30);
}

template <class T>
double bound_of(const stored& s) {
  const double own = std::is_same_v<T, float> ? s.litgpt_f32 : s.litgpt_bf16;
  return std::max(fxt::tol<T>().rtol, 2 * own);
}

struct outcome {
  double worst = 0;       // the largest error of any tensor
  double worst_ratio = 0;  // the largest error / bound
  std::string worst_name;
};

// Runs block Grad on the case's data; checks (or, with expect_match false,
// returns) the output and all gradients against litgpt's.
template <class T, const auto& Grad>
outcome run_case(const reference& ref, bool expect_match = true) {
  const int B = ref.B, Tn = ref.T, C = static_cast<int>(ref.cfg("n_embd"));
  const auto x = tensor_of<T, 3>({B, Tn, C}, ref.x());
  const auto dy = tensor_of<T, 3>({B, Tn, C}, ref.dy());
  const auto cos = tensor_of<T, 2>(ref.at("cos").shape, ref.at("cos").values);
  const auto sin = tensor_of<T, 2>(ref.at("sin").shape, ref.at("sin").values);
  const int n_head = static_cast<int>(ref.cfg("n_head")), groups = static_cast<int>(ref.cfg("n_query_groups"));
  const int hs = static_cast<int>(ref.cfg("head_size")), n_elem = static_cast<int>(ref.cfg("rope_n_elem"));

  // parameters in litgpt's order, as fusex's tensors (weights transposed)
  constexpr std::size_t np = std::tuple_size_v<typename std::remove_cvref_t<decltype(Grad)>::backward_program::result_type> - 1;
  REQUIRE(ref.params.size() == np);
  auto make_params = [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&](std::size_t k) -> const litgpt_data::param& { return ref.params[k]; };
    return std::tuple{[&] {
      using H = std::tuple_element_t<I + 1, typename std::remove_cvref_t<decltype(Grad)>::backward_program::result_type>;
      const auto& p = one(I);
      return tensor_of<T, H::rank>(p.shape, p.values, H::rank == 2);
    }()...};
  };
  const auto params = make_params(std::make_index_sequence<np>{});
  auto run = [&](const auto&... p) {
    return fx::value_and_grad(Grad, fx::host{}, fx::inputs(x, cos, sin, p..., n_head, groups, hs, n_elem),
                              fx::cotangents(dy));
  };
  const auto r = std::apply(run, params);

  outcome o;
  auto check = [&](const std::string& name, const auto& got, bool transposed) {
    const stored& s = ref.at(name);
    const double err = scaled_error(got, s, transposed), bound = bound_of<T>(s);
    if (err / bound > o.worst_ratio) o.worst_ratio = err / bound, o.worst_name = name;
    o.worst = std::max(o.worst, err);
    if (expect_match) {
      INFO(ref.name << " " << name << ": error " << err << " (litgpt's own: f32 " << s.litgpt_f32 << ", bf16 "
                    << s.litgpt_bf16 << "), bound " << bound);
      CHECK(err <= bound);
    }
  };
  check("y", std::get<0>(r.outputs), false);
  check("dx", std::get<0>(r.gradients), false);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (check("d." + ref.params[I].name, std::get<I + 1>(r.gradients), ref.params[I].shape.size() == 2), ...);
  }(std::make_index_sequence<np>{});
  if (expect_match)
    std::printf("litgpt %-20s %-5s largest error %.2e (%s at %.2f of its bound)\n", ref.name.c_str(),
                std::is_same_v<T, float> ? "f32" : "bf16", o.worst, o.worst_name.c_str(), o.worst_ratio);
  return o;
}

}  // namespace
