#pragma once
// fusex::index: an integer known at compile time or at run time. Extents,
// slice bounds, pad widths and reshape extents are indices, so a plan traced
// once serves every model configuration (static and dynamic values alike).

#include <concepts>
#include <cstdint>

#include "builder.hpp"

namespace fusex {

class index {
 public:
  constexpr index() = default;
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  constexpr index(I v) : value_(static_cast<std::int64_t>(v)) {}

  constexpr bool is_constant() const { return b_ == nullptr; }
  // The value of a compile-time index (0 for a run-time one).
  constexpr std::int64_t constant_value() const { return value_; }

  // Internal: a run-time index recorded in a trace.
  constexpr index(detail::builder* b, std::int32_t id) : b_(b), id_(id) {
    if (b->is_const(id)) {
      b_ = nullptr;
      value_ = b->exprs[id].value;
    }
  }
  constexpr detail::builder* builder_() const { return b_; }
  constexpr std::int32_t id_in(detail::builder& b) const {
    if (b_ == nullptr) return b.constant(value_);
    if (b_ != &b) detail::fusex_internal_index_from_another_trace();
    return id_;
  }

 private:
  detail::builder* b_ = nullptr;
  std::int32_t id_ = -1;
  std::int64_t value_ = 0;

  static constexpr index combine(expr_kind k, index a, index b) {
    detail::builder* bl = a.b_ ? a.b_ : b.b_;
    if (bl == nullptr) {
      detail::builder tmp;  // fold two constants with the same rules as the trace
      return index(tmp.exprs[tmp.binary(k, tmp.constant(a.value_), tmp.constant(b.value_))].value);
    }
    return index(bl, bl->binary(k, a.id_in(*bl), b.id_in(*bl)));
  }

  friend constexpr index operator+(index a, index b) { return combine(expr_kind::add, a, b); }
  friend constexpr index operator-(index a, index b) { return combine(expr_kind::sub, a, b); }
  friend constexpr index operator*(index a, index b) { return combine(expr_kind::mul, a, b); }
  // Floor division and remainder for the non-negative values extents take.
  friend constexpr index operator/(index a, index b) { return combine(expr_kind::div, a, b); }
  friend constexpr index operator%(index a, index b) { return combine(expr_kind::mod, a, b); }
};

}  // namespace fusex
