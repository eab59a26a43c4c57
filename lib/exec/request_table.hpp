// The MPI requests of every collective in flight on one communicator, tested together: one
// MPI_Testsome per progress round, whatever the number of collectives and steps.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace toroid::exec {

// Who is told when a request completes: an MPI transfer and the segment (or slot) it was for.
class RequestOwner {
 public:
  virtual void completed(std::uint32_t segment) = 0;

 protected:
  ~RequestOwner() = default;
};

class RequestTable {
 public:
  // A free request slot, remembered as `owner`'s `segment`: pass it to MPI_Isend/MPI_Irecv.
  MPI_Request* post(RequestOwner* owner, std::uint32_t segment);
  // Hands every finished request to its owner; returns how many finished. Never blocks.
  int test() { return complete(false); }
  // Blocks until at least one request finishes (MPI_Waitsome), then as test().
  int wait_some() { return complete(true); }
  std::size_t open() const noexcept { return open_; }
  // Forgets every owner (their collectives failed); the requests stay with MPI.
  void abandon();

 private:
  int complete(bool block);
  int handle(int n);
  struct Entry {
    RequestOwner* owner = nullptr;
    std::uint32_t segment = 0;
  };
  std::vector<MPI_Request> requests_;
  std::vector<Entry> entries_;
  std::vector<int> free_, done_;
  std::size_t open_ = 0;
};

}  // namespace toroid::exec
