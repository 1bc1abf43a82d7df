#pragma once
// A table of extents by argument: axis `axis` of tensor argument `arg`, or
// (axis -1) the value of index argument `arg`, arguments counted in
// declaration order. The planner takes one as hints (typical values,
// plan/extents.hpp); fusex::trace takes one as fixed extents, which become
// constants of the trace (capture, planning, code generation) and are
// checked when the program runs.

#include <cstddef>
#include <cstdint>

#include "../core/error.hpp"

namespace fusex {

// One hinted value: axis `axis` of tensor argument `arg`, or (axis -1) the
// value of index argument `arg`. Arguments count in declaration order.
struct extent_hint {
  std::int32_t arg = -1;
  std::int32_t axis = -1;
  std::int64_t value = 0;
};

namespace detail {
inline void fusex_error_too_many_extent_hints() { throw argument_error("fusex: more than 32 extent hints"); }
inline void fusex_error_extent_hint_not_positive() { throw argument_error("fusex: an extent hint must be positive"); }
}  // namespace detail

// A literal type, so it can be a template argument of a plan or a program.
struct extent_hints {
  static constexpr int capacity = 32;
  int count = 0;
  extent_hint hint[capacity] = {};

  constexpr extent_hints extent(int arg, int axis, std::int64_t v) const {
    if (count == capacity) detail::fusex_error_too_many_extent_hints();
    if (v <= 0) detail::fusex_error_extent_hint_not_positive();
    extent_hints r = *this;
    r.hint[r.count++] = {arg, axis, v};
    return r;
  }
  // Every axis of tensor argument `arg` (0 leaves an axis unhinted).
  template <std::size_t R>
  constexpr extent_hints shape(int arg, const std::int64_t (&ext)[R]) const {
    extent_hints r = *this;
    for (std::size_t i = 0; i < R; ++i)
      if (ext[i] != 0) r = r.extent(arg, static_cast<int>(i), ext[i]);
    return r;
  }
  // The value of index argument `arg` (a head count, a head size, ...).
  constexpr extent_hints value(int arg, std::int64_t v) const { return extent(arg, -1, v); }
};

}  // namespace fusex
