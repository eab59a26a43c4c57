// Buffer: memory toroid owns, from Communicator::allocate, that the collectives can use in place
// across the ranks of a node (single-copy: docs/transport.md, "Single-copy: buffers toroid owns").
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

class Communicator;

// `count` elements of T, zero filled, in the node's shared memory; frees itself when the last
// copy of the Buffer goes (local: peers keep their views). Copies share the memory, like a
// shared pointer. Any part of it may be passed to the collectives like other memory; when every
// rank's input and output of a blocking all-reduce, reduce-scatter or all-gather under `auto`
// lie in buffers of one allocate call each, on a communicator all on one node, the collective
// works on the ranks' buffers directly and moves the least memory an all-reduce can.
template <class T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "toroid::Buffer holds trivially copyable types");

 public:
  Buffer() = default;

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size_; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  std::span<T> span() const noexcept { return {data_, size_}; }
  operator std::span<T>() const noexcept { return span(); }
  operator std::span<const T>() const noexcept { return {data_, size_}; }

 private:
  friend class Communicator;
  Buffer(std::shared_ptr<void> owner, T* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  std::shared_ptr<void> owner_;  // the allocation; its last owner unmaps it
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace toroid
TOROID_API_END
