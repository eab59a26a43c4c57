// Gradient summation that overlaps the backward pass.
//
// A backward pass produces gradients last layer first. GradientReducer packs them into buckets
// as they become ready and starts each full bucket's non-blocking all-reduce at once, so the
// summation of the last layers runs while earlier layers still compute; finish() waits for
// what is left and writes the (averaged) sums back into the gradients.
//
//   backward:  [layer 3][layer 2][layer 1][layer 0]
//   ready():           ^3       ^2       ^1       ^0
//   buckets:           |b0 (small) allreduce|b1 allreduce ......|b2 ....|finish()
//
// Terms: registration order is the order of the list given to the constructor; bucket order is
// the order tensors are packed in, at first reverse registration order, after the first step
// the order rank 0 saw ready() calls in (as PyTorch DDP rebuilds its buckets). Buckets are at
// most `bucket_bytes` (the first at most `first_bucket_bytes`, so communication starts early),
// counted in the wire type (f32, or bf16 with `bf16`); a tensor may straddle buckets. Buckets
// start strictly in bucket order on every rank (a full bucket waits for the ones before it),
// which keeps the collectives of all ranks in the same order whatever order each rank's
// ready() calls come in.
//
//   toroid::GradientReducer reducer(comm, {{"fc1.weight", g1}, {"fc1.bias", gb1}, {"fc2.weight", g2}});
//   for (...) {
//     forward(); backward_layer2(); reducer.ready("fc2.weight");
//     backward_layer1(); reducer.ready("fc1.weight"); reducer.ready("fc1.bias");
//     reducer.finish();                      // g1, gb1, g2 now hold the mean over ranks
//   }
//
// Progress: each ready() and poll() runs one round of the communicator's engine; with
// Options::progress = thread (TOROID_PROGRESS=thread) a progress thread moves the buckets while
// the caller computes. ready() and poll() are called from one thread.
//
// Errors: a gradient never marked ready, marked twice, or a name or index that is not
// registered is reported by finish(), on every rank alike (InvalidArgument naming the gradient
// and the rank), after every bucket has been completed, so no rank is left in a collective.
//
// Determinism: with a fixed bucket layout (same tensors, bucket sizes, rank count, algorithm and
// topology) the sums are bitwise the same run to run, whatever the ready() order and timing:
// each element is summed over ranks by the same schedule in the same order. What changes the
// bits: the bucket layout (bucket_bytes, first_bucket_bytes, the order rebuilt after the first
// step: set rebuild_buckets = false to keep it), the rank count, the algorithm or topology, and
// bf16 on the wire. docs/overlap.md.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/algorithm.hpp"
#include "toroid/communicator.hpp"
#include "toroid/defaults.hpp"
#include "toroid/export.hpp"
#include "toroid/types.hpp"

TOROID_API_BEGIN
namespace toroid {

// One gradient: summed over ranks in place. The span must stay valid for the reducer's life.
struct Gradient {
  Gradient(std::string name, std::span<float> grads);
  Gradient(std::string name, std::span<bfloat16> grads);
  std::string name;
  void* data;
  std::size_t count;
  DataType type;  // f32 or bf16
};

struct ReducerConfig {
  std::size_t bucket_bytes = default_bucket_bytes;
  std::size_t first_bucket_bytes = default_first_bucket_bytes;
  // Sum in bf16 on the wire (each addition in f32, rounded to bf16 between hops).
  bool bf16 = false;
  // Divide the sums by the rank count (data-parallel mean).
  bool average = true;
  // After the first step, re-cut the buckets in the order rank 0 saw ready() calls.
  bool rebuild_buckets = true;
  // Algorithm of the bucket all-reduces; empty: the communicator's default.
  std::optional<Algorithm> algorithm;
};

class GradientReducer {
 public:
  // Collective over comm. Throws InvalidArgument on every rank for an empty list, duplicate or
  // empty names, a type other than f32/bf16, bad bucket sizes, or lists and configurations that
  // differ between ranks.
  GradientReducer(Communicator& comm, std::vector<Gradient> grads, ReducerConfig config = {});
  ~GradientReducer();  // completes buckets still in flight
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // The gradient (by registration index or name) holds its final value for this step: pack it,
  // start every bucket that is now complete (in bucket order), run one round of progress.
  void ready(std::size_t index);
  void ready(std::string_view name);
  // One round of progress on the buckets in flight (for callers without a progress thread who
  // want the buckets to move during long computations).
  void poll();
  // Collective: every gradient has been marked ready on every rank; waits for the buckets and
  // writes the sums back. The next step's ready() calls may follow.
  void finish();

  // Gradient names per bucket, in bucket order (the current layout).
  std::vector<std::vector<std::string>> buckets() const;

  struct TOROID_HIDDEN Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace toroid
TOROID_API_END
