#pragma once
// Programs that more than one executor's suite runs, written once.

#include <fusex/fusex.hpp>

namespace fxt::programs {

namespace fx = fusex;

// Every remap in one program, with a run-time pad width: permute, pad,
// reshape (merging a padded axis), strided slice, and cat of the slice.
constexpr auto remaps = fx::trace([](fx::tensor<float, 3> x, fx::index lo) {
  auto t = fx::permute<2, 0, 1>(x);
  auto p = fx::pad<1>(t, lo, 2, 7.0);
  auto r = fx::reshape(p, {t.extent<0>(), -1});
  auto s = fx::slice<1>(r, 1, r.extent<1>(), 3);
  return std::tuple{r * 2.0f, fx::cat<1>(s, s) - 1.0f};
});

}  // namespace fxt::programs
