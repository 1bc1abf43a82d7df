#pragma once
// Strided, non-owning views of caller memory, and an owning host tensor.
// Extents and strides are in elements; strides may be any non-negative
// values, so transposed or sliced caller data needs no copy.

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/dtype.hpp"

namespace fusex {

template <int R>
using extents_array = std::array<index_t, R>;

template <int R>
constexpr extents_array<R> contiguous_strides(const extents_array<R>& ext) {
  extents_array<R> s{};
  index_t acc = 1;
  for (int i = R - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= ext[i];
  }
  return s;
}

template <class T, int R>
class view {
  static_assert(is_element_type_v<std::remove_const_t<T>>, "fusex::view: unsupported element type");
  static_assert(R >= 0 && R <= max_rank, "fusex::view: rank must be between 0 and 8");

 public:
  using element_type = T;
  using value_type = std::remove_const_t<T>;
  static constexpr int rank = R;

  constexpr view() = default;
  // Row-major contiguous.
  constexpr view(T* data, const extents_array<R>& extents)
      : data_(data), ext_(extents), str_(contiguous_strides<R>(extents)) {}
  constexpr view(T* data, const extents_array<R>& extents, const extents_array<R>& strides)
      : data_(data), ext_(extents), str_(strides) {}
  // A view of const elements from a view of mutable ones.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  constexpr view(const view<U, R>& v) : data_(v.data()), ext_(v.extents()), str_(v.strides()) {}

  constexpr T* data() const { return data_; }
  constexpr index_t extent(int i) const { return ext_[i]; }
  constexpr index_t stride(int i) const { return str_[i]; }
  constexpr const extents_array<R>& extents() const { return ext_; }
  constexpr const extents_array<R>& strides() const { return str_; }
  constexpr index_t size() const {
    index_t n = 1;
    for (int i = 0; i < R; ++i) n *= ext_[i];
    return n;
  }
  constexpr bool is_contiguous() const { return str_ == contiguous_strides<R>(ext_); }

  template <class... I>
    requires(sizeof...(I) == R && (std::is_integral_v<I> && ...))
  constexpr T& operator()(I... i) const {
    const index_t idx[R > 0 ? R : 1] = {static_cast<index_t>(i)...};
    index_t off = 0;
    for (int k = 0; k < R; ++k) off += idx[k] * str_[k];
    return data_[off];
  }

 private:
  T* data_ = nullptr;
  extents_array<R> ext_{};
  extents_array<R> str_{};
};

template <class T, std::size_t R>
view(T*, const std::array<index_t, R>&) -> view<T, static_cast<int>(R)>;

// An owning, contiguous, row-major tensor in host memory. (Storage is a plain
// array, not std::vector, so bool tensors have addressable elements too.)
// Its values start on a 64-byte cache line, as a vector unit's loads and
// the host executor's streamed stores (whole lines) want them.
template <class T, int R>
class host_tensor {
  struct line_delete {
    std::size_t n = 0;
    void operator()(T* p) const {
      std::destroy_n(p, n);
      ::operator delete(static_cast<void*>(p), std::align_val_t{line});
    }
  };
  static constexpr std::size_t line = alignof(T) > 64 ? alignof(T) : 64;
  static std::unique_ptr<T[], line_delete> allocate(std::size_t n) {
    T* p = static_cast<T*>(::operator new(n * sizeof(T) > 0 ? n * sizeof(T) : 1, std::align_val_t{line}));
    try {
      std::uninitialized_value_construct_n(p, n);
    } catch (...) {
      ::operator delete(static_cast<void*>(p), std::align_val_t{line});
      throw;
    }
    return std::unique_ptr<T[], line_delete>(p, line_delete{n});
  }

 public:
  using value_type = T;
  static constexpr int rank = R;

  host_tensor() = default;
  explicit host_tensor(const extents_array<R>& extents) : ext_(extents) {
    size_ = 1;
    for (int i = 0; i < R; ++i) size_ *= extents[i];
    data_ = allocate(static_cast<std::size_t>(size_));
  }
  host_tensor(const extents_array<R>& extents, std::initializer_list<T> values) : host_tensor(extents) {
    std::size_t i = 0;
    for (const T& v : values)
      if (i < static_cast<std::size_t>(size_)) data_[i++] = v;
  }
  host_tensor(host_tensor&&) noexcept = default;
  host_tensor& operator=(host_tensor&&) noexcept = default;
  host_tensor(const host_tensor& o) : host_tensor(o.ext_) {
    for (index_t i = 0; i < size_; ++i) data_[i] = o.data_[i];
  }
  host_tensor& operator=(const host_tensor& o) {
    if (this != &o) *this = host_tensor(o);
    return *this;
  }

  view<T, R> as_view() { return view<T, R>(data_.get(), ext_); }
  view<const T, R> as_view() const { return view<const T, R>(data_.get(), ext_); }
  operator view<T, R>() { return as_view(); }
  operator view<const T, R>() const { return as_view(); }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  index_t extent(int i) const { return ext_[i]; }
  const extents_array<R>& extents() const { return ext_; }
  index_t size() const { return size_; }
  std::span<T> values() { return {data_.get(), static_cast<std::size_t>(size_)}; }
  std::span<const T> values() const { return {data_.get(), static_cast<std::size_t>(size_)}; }

  template <class... I>
  T& operator()(I... i) {
    return as_view()(i...);
  }
  template <class... I>
  const T& operator()(I... i) const {
    return as_view()(i...);
  }

 private:
  extents_array<R> ext_{};
  index_t size_ = 0;
  std::unique_ptr<T[], line_delete> data_;
};

}  // namespace fusex
