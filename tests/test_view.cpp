#include "support.hpp"

namespace fx = fusex;

TEST_CASE("views: contiguous strides, element access, const conversion", "[view]") {
  std::vector<float> data(24);
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  fx::view<float, 3> v(data.data(), {2, 3, 4});
  CHECK(v.stride(0) == 12);
  CHECK(v.stride(1) == 4);
  CHECK(v.stride(2) == 1);
  CHECK(v.size() == 24);
  CHECK(v(1, 2, 3) == 23.0f);
  CHECK(v.is_contiguous());
  fx::view<const float, 3> c = v;
  CHECK(c(1, 0, 2) == 14.0f);
  // A transposed view of the same memory.
  fx::view<float, 2> t(data.data(), {4, 6}, {1, 4});
  CHECK(t(3, 5) == 23.0f);
  CHECK(!t.is_contiguous());
  fx::host_tensor<double, 2> h({2, 2}, {1, 2, 3, 4});
  CHECK(h(1, 0) == 3.0);
  CHECK(h.as_view().stride(0) == 2);
}
