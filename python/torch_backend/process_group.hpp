// A torch.distributed (c10d) process group whose collectives are toroid's.
//
//   torch.distributed.all_reduce(t)  ->  ProcessGroupToroid::allreduce  ->  toroid::iallreduce
//        work.wait() / DDP's future  <-  WorkQueue's completer: test() the oldest request, complete
//
// Terms: a *work* is what c10d returns for one operation: it completes when every toroid
// request behind it has (one per tensor for coalesced all-reduces), after any copy from a
// staging buffer into the caller's output tensors (list forms of all-gather and reduce-scatter).
// Its future (getFuture, which DDP's communication hooks chain on) completes at the same time.
// Works complete in the order they were started, by the caller's thread or the group's
// completer thread (work_queue.hpp says which, when, and why a thread of its own).
//
// Written against torch 1.13 (Debian's): c10d::ProcessGroup is the base class there (later
// releases moved collectives to c10d::Backend).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "toroid/communicator.hpp"
#include "toroid/request.hpp"
#include "work_queue.hpp"

namespace toroid::torch_backend {

class ProcessGroupToroid;

class ToroidWork : public c10d::Work {
 public:
  ToroidWork(ProcessGroupToroid& group, c10d::OpType type, std::vector<at::Tensor> outputs);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Filled by the process group before the work is queued; run by the completer.
  std::vector<Request> requests;
  std::function<void()> finish;  // copies out of staging buffers, if any
  std::vector<at::Tensor> keep;  // staging buffers and inputs the requests read or write

  // Drive the requests to the end (the caller: toroid's wait; the completer: one round per
  // test), copy out, complete (the future's callbacks run on this thread).
  void drive(bool caller);
  void complete(std::exception_ptr error);
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // Which thread drives this work: the first to claim it (the completer, or a waiting caller).
  bool claim() { return !claimed_.exchange(true); }
  bool claimed() const { return claimed_.load(); }

 private:
  WorkQueue& queue_;  // its group's
  std::atomic<bool> claimed_{false};
  void settle(c10::ivalue::Future& future);  // complete it as this work completed
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made by getFuture
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// A point-to-point work (send, recv): one MPI request, completed by whoever tests or waits on it
// (MPI runs with MPI_THREAD_MULTIPLE), so a pair of isend/irecv never waits on the completer.
class MpiWork : public c10d::Work {
 public:
  MpiWork(int rank, c10d::OpType type, std::vector<at::Tensor> tensors, MPI_Request request);
  ~MpiWork() override;
  bool isCompleted() override;
  bool isSuccess() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  int sourceRank() const override;  // recv from any source: who sent it

 private:
  bool test_locked();  // MPI_Test once; true when done
  std::vector<at::Tensor> tensors_;
  mutable std::mutex mutex_;
  MPI_Request request_;
  MPI_Status status_{};
  bool done_ = false;
};

class ProcessGroupToroid : public c10d::ProcessGroup {
 public:
  // Collective over the group's members: the torch world (MPI_COMM_WORLD when torch ranks are
  // MPI ranks), or a sub-group of it made by dist.new_group (an MPI communicator of its members
  // in group-rank order). Each process must be one MPI rank.
  ProcessGroupToroid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size);
  ~ProcessGroupToroid() override;

  const std::string getBackendName() const override { return "toroid"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  // One list of tensors per rank: packed, one all-gather, unpacked into every rank's list.
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // toroid's all-reduce, kept on the root (the other ranks' tensors are left as they were).
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  // The rest of c10d, which toroid has no schedules for, on MPI (mpi_ops.cpp): the collectives
  // run on the caller's thread and return completed works; send and recv are MpiWorks.
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  Communicator& communicator() { return *comm_; }
  WorkQueue& works() { return works_; }

 private:
  c10::intrusive_ptr<c10d::Work> enqueue(c10::intrusive_ptr<ToroidWork> work);

  // One tensor all-reduced: in place, or into scratch (the tensor keeps its values).
  c10::intrusive_ptr<c10d::Work> start_allreduce(std::vector<at::Tensor>& tensors,
                                                 const c10d::ReduceOp& reduce_op, bool in_place,
                                                 c10d::OpType type, const char* name);
  c10::intrusive_ptr<c10d::Work> completed(c10d::OpType type, std::vector<at::Tensor> outputs);
  // Movement of a dtype toroid has no type for, as bytes on MPI (mpi_ops.cpp). `outputs`: the
  // flat output (_allgather_base) or one tensor per rank.
  c10::intrusive_ptr<c10d::Work> broadcast_bytes(at::Tensor& t, int root);
  // An all-reduce toroid cannot do (its dtype or op) that MPI can: on the caller's thread;
  // `in_place` false leaves the tensor as it was (reduce, off the root).
  static bool mpi_reduces(const at::Tensor& t, const c10d::ReduceOp& op);
  c10::intrusive_ptr<c10d::Work> allreduce_on_mpi(at::Tensor& t, const c10d::ReduceOp& op,
                                                  bool in_place, c10d::OpType type,
                                                  const char* name);
  c10::intrusive_ptr<c10d::Work> allgather_bytes(const at::Tensor& in,
                                                 std::vector<at::Tensor> outputs,
                                                 c10d::OpType type);
  // An all-to-all toroid has no form for (split sizes, a dtype it has no type for): the bytes
  // through MPI_Alltoallv (mpi_ops.cpp).
  // all_to_all's list form through MPI_Alltoallv (dtypes toroid does not have).
  c10::intrusive_ptr<c10d::Work> alltoall_bytes_list(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts);
  c10::intrusive_ptr<c10d::Work> alltoall_bytes(at::Tensor& output, at::Tensor& input,
                                                std::vector<int64_t>& output_splits,
                                                std::vector<int64_t>& input_splits);
  c10::intrusive_ptr<c10d::Work> point_to_point(std::vector<at::Tensor>& tensors, int peer, int tag,
                                                bool sending, const char* op);

  std::unique_ptr<Communicator> comm_;
  MPI_Comm mpi_ = MPI_COMM_NULL;  // the group's own duplicate for the MPI operations
  // Last: its destructor completes the works still pending while the communicator is alive.
  WorkQueue works_;
};

}  // namespace toroid::torch_backend
