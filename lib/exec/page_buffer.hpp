// Memory of a collective's own (an op's scratch and MPI staging): whole pages mapped for it,
// never the heap's.
//
// Why: with malloc, where a large block lands depends on the process's history. glibc serves a
// block above its mmap threshold from fresh pages, page-aligned, but raises that threshold
// after a large free (up to 32 MiB), so later blocks of the same size come from the heap, at
// another alignment against the user's buffers and the shared-memory slots, and on pages other
// blocks share. A fresh job then runs the same collective on differently placed scratch:
// fixing the threshold for a whole job (MALLOC_MMAP_THRESHOLD_=65536) narrowed the spread of
// 10 fresh jobs' medians from 1.15-2.41 to 1.12-1.53 (docs/performance.md). Mapping the
// memory here gives every job the same placement whatever the program allocated before.
//
// Growing maps new pages (the contents are not kept: scratch and staging hold nothing between
// collectives); the pages are zero when first touched, as a resized vector's would be.
#pragma once

#include <cstddef>

namespace toroid::exec {

class PageBuffer {
 public:
  PageBuffer() = default;
  ~PageBuffer();
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  // At least `bytes` bytes from now on; throws std::bad_alloc when the mapping fails.
  void reserve(std::size_t bytes);
  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace toroid::exec
