// Reentrancy guard: which MPI_* calls of this process are toroid's own.
//
// toroid calls MPI_Allreduce and MPI_Allgather itself: agreeing on errors and configuration
// across ranks, node discovery while a Communicator is built, the stock `mpi` algorithm. Inside
// this library those names resolve to the interposed functions, so without a guard a toroid
// collective would re-enter toroid (at best a second Communicator, at worst endless recursion).
//
// Every interposed function therefore asks `inside_toroid()` first and, when true, forwards to
// the PMPI_ function unchanged. The flag is per thread: it marks "this thread is running toroid
// code now", which is exactly the set of calls that must not be served again, and another
// thread's unrelated MPI_Allreduce (MPI_THREAD_MULTIPLE) is still served.
//
// Why a guard rather than pointing toroid's own calls at PMPI_ (a second compile of the
// library with the names redefined, or objcopy renames): the guard needs no second copy of the
// objects, stays correct when toroid gains a new internal MPI_Allreduce, and also covers calls
// toroid makes through other code (its destructors during MPI_Comm_free, MPI itself).
#pragma once

namespace toroid::pmpi {

bool inside_toroid() noexcept;

// Marks the current thread as inside toroid for the guard's lifetime (nests).
class ToroidScope {
 public:
  ToroidScope() noexcept;
  ~ToroidScope();
  ToroidScope(const ToroidScope&) = delete;
  ToroidScope& operator=(const ToroidScope&) = delete;
};

}  // namespace toroid::pmpi
