#pragma once
// Division by a run-time invariant: q = n / d for 0 <= n < 2^31 as a
// multiply-high, an add and a shift (Granlund and Montgomery), with the
// magic numbers computed once on the host. Kernels divide by extents (to
// turn a linear item into coordinates, to unflatten a reshape) on every
// item; a hardware-free 32-bit divide is about 4 instructions where a
// 64-bit `/` and `%` is a ~70-instruction subroutine call.

#include <cstdint>

#include "../core/config.hpp"

namespace fusex::detail::codegen {

FUSEX_HD inline std::uint32_t mul_hi(std::uint32_t a, std::uint32_t b) {
#if FUSEX_DEVICE_PASS
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
}

struct fastdiv {
  std::int32_t d = 1;
  std::uint32_t mul = 1;
  std::uint32_t shift = 0;

  fastdiv() = default;
  // For 1 <= divisor < 2^31; other values (0 for empty extents, which no
  // item ever divides by) behave as 1.
  explicit constexpr fastdiv(std::int64_t divisor) {
    if (divisor < 1 || divisor >= (std::int64_t{1} << 31)) divisor = 1;
    d = static_cast<std::int32_t>(divisor);
    std::uint32_t s = 0;
    while ((std::uint64_t{1} << s) < static_cast<std::uint64_t>(divisor)) ++s;
    shift = s;
    // mul = floor(2^32 (2^s - d) / d) + 1 < 2^32
    mul = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << s) - static_cast<std::uint64_t>(divisor))) /
                                         static_cast<std::uint64_t>(divisor) +
                                     1);
  }
  // n / d for 0 <= n < 2^31 (the sum below then stays under 2^32).
  FUSEX_HD std::int32_t div(std::int32_t n) const {
    const std::uint32_t u = static_cast<std::uint32_t>(n);
    return static_cast<std::int32_t>((mul_hi(u, mul) + u) >> shift);
  }
  // q = n / d, r = n % d.
  FUSEX_HD void divmod(std::int32_t n, std::int32_t& q, std::int32_t& r) const {
    q = div(n);
    r = n - q * d;
  }
  // 64-bit dividends: the fast path when they fit, the hardware otherwise.
  FUSEX_HD void divmod(long long n, long long& q, long long& r) const {
    if (n >= 0 && n < (1LL << 31)) {
      const std::int32_t q32 = div(static_cast<std::int32_t>(n));
      q = q32;
      r = n - q * d;
    } else {
      q = n / d;
      r = n - q * d;
    }
  }
};

}  // namespace fusex::detail::codegen
