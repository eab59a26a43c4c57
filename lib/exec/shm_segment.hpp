// One block of memory shared by the ranks of a node: a file in /dev/shm that every rank maps.
//
// Why not an MPI-3 shared window (MPI_Win_allocate_shared): MPI_Win_free is collective and
// synchronizing (Open MPI's osc/sm enters a barrier), so a window can only be freed where every
// rank of the node frees it at the same moment. A communicator's toroid state is freed where the
// program lets go of it: in MPI_Comm_free, from a garbage collector, from a destructor at the
// end of main, or from MPI_Finalize for what is still alive, in whatever order each rank gets
// there. Anything collective in that teardown waits for ranks that are freeing something else.
//
// A mapped file has no such tie: unmapping is local, and the memory stays valid for every rank
// that still maps it, so a peer still reading or writing its end of a ring after this rank let
// go touches live memory. The file's name exists only while the segment is being set up:
//
//   local rank 0: shm_open(O_CREAT|O_EXCL) + ftruncate (sparse)  --name-->  every local rank
//   every local rank: shm_open + mmap, results agreed on the node  -->  rank 0: shm_unlink
//
// so nothing is left in /dev/shm once the constructor returns, whatever happens to the job later.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace toroid::exec {

// `bytes` rounded up to whole pages.
std::size_t page_rounded(std::size_t bytes);

class SharedSegment {
 public:
  static constexpr const char* kDir = "/dev/shm";  // where shm_open places its files (Linux)

  // Collective over `node` (ranks that share memory). Every rank maps the same `bytes`, zero
  // filled. Unreserved (the links' rings): pages are only taken when first touched, and a full
  // /dev/shm shows later as SIGBUS on a first touch, so the caller checks the room first.
  // Reserved (memory handed to the program, Communicator::allocate): the node's first rank
  // reserves every page up front (posix_fallocate), so a full /dev/shm is an error here.
  // Throws toroid::Error on every rank of `node` alike when any of them cannot create, reserve,
  // open or map it.
  enum class Pages { on_first_touch, reserved };
  SharedSegment(MPI_Comm node, std::size_t bytes, Pages pages = Pages::on_first_touch);
  // Local: unmaps this rank's view and waits for nobody (see above).
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace toroid::exec
