// Single-copy all-reduce, reduce-scatter and all-gather on one node, for buffers every rank got
// from Communicator::allocate (node_memory.hpp): no rings and no copies through slots; each rank
// works on the other ranks' buffers in place.
//
//   p ranks, vector of N elements cut into blocks B_0 .. B_{p-1} (block_of); rank i owns B_i.
//   all-reduce      rank i:  t = in_0[B_i] op in_1[B_i] op ... op in_{p-1}[B_i]   (chunk by chunk,
//                            t a small cache-resident buffer), then out_j[B_i] = t for every j
//   reduce-scatter  rank i:  out_i = in_0[B_i] op ... op in_{p-1}[B_i]
//   all-gather      rank i:  out_i[B_j] = in_j for every j
//   all-to-all      rank i:  out_i[B_j] = in_j[B_i] for every j (blocks of N/p: the j-th of my
//                            output is the i-th of j's input), peers in the order i, i+1, ...
//   alltoallv       the same with each rank's own blocks: rank i reads from in_j the block j
//                            sends to i, where j's layout (published in j's stage) puts it
//
//   traffic per rank: all-reduce reads N and writes N (the traffic of one copy of the vector,
//   the least any all-reduce on one node can move: 2pN bytes in all); reduce-scatter reads N
//   and writes N/p; all-gather reads and writes N (N/p less in place); all-to-all reads and
//   writes N (its output once: every byte moves once, from the sender's input to the
//   receiver's output, where the channels copy it in and out of a slot).
//
// An alltoallv's post carries no counts (they differ per rank); each rank writes its send counts,
// send offsets and receive counts into its stage before it posts (3p words, p up to 682), its
// whole input after them where that fits too (then peers copy its blocks from there, and where
// every rank's did, the call ends without a leave, as a staged one), and
// after entering every rank compares every sender's send count with its receiver's receive
// count, so a disagreement is the same InvalidArgument on every rank, checked or not, before
// anything moves: a rank never reads past a peer's block or writes past its own.
//
// Why it is safe, with every rank's call meeting in the node's control block (CallPost):
//   enter  rank i writes what it passed (allocation and offset of its input and output, count,
//          type, op), then its post's seq (release); it waits for every peer's post of this call
//          (acquire). So nobody reads a peer's input before the peer entered with it final.
//   work   only rank i reads block B_i of any input or writes block B_i of any output (all-gather:
//          only rank i writes out_i, and it reads each in_j, which nobody writes), so in place
//          needs no more than reading a chunk before writing it, which one rank does in order.
//   leave  rank i publishes done = seq (release) after its last read and write, and returns only
//          once every peer's done reaches seq (acquire). So nobody returns (and reuses its buffers)
//          while a peer still reads its input or writes its output.
// Posts alternate between two lines by seq parity: a rank writes call k+2's post only after every
// peer has posted k+1, which each does after it finished reading the posts of k.
//
// Every rank sees every post, so all of them decide alike: mismatched calls (count, type, op,
// collective) raise the same InvalidArgument on every rank; buffers from different allocations
// (which a rank may no longer map) make every rank run the call's schedule instead.
//
// Staged: small calls on any memory. Where a call's input fits a stage (NodeMemory::kStageBytes,
// 16 KiB, and what a rank reads of the p stages at most kStagedReadBytes), each rank copies its
// input into its own stage in the control segment before it posts, and after entering computes
// its whole result from the p stages itself (all-reduce: out = stage_0 op ... op stage_{p-1};
// reduce-scatter: its block of that; all-gather: out[B_j] = stage_j; all-to-all: out[B_j] =
// stage_j[B_i]; not alltoallv, whose stage holds its layout). One meeting per call instead of the log2(p) exchanges of
// recursive doubling, and no leave: a rank overwrites its stage of parity k%2 only at call k+2,
// after every peer posted k+1, which each does after it finished reading the stages of k. Which
// path a call takes depends on its count, type and the rank count only (the same on every rank
// of a matching call): small ones staged (at 3 ranks and more; the schedule at 2), larger ones
// single-copy for toroid's buffers, else the schedule.
//
// Remote reads: all-to-alls on any memory. An all-to-all reads nothing but its peers' inputs and
// writes nothing but its own output, so a rank can copy its blocks straight out of the senders'
// address spaces (process_vm_readv, Linux's cross-memory attach, as Open MPI's vader does) with
// the same enter / work / leave: every post also carries the rank's process and the addresses
// of its buffers, and where the ranks' buffers are not all in one allocation (any of them
// ordinary memory) every rank reads that way, decided alike from the posts. One copy per byte
// on any memory, where the channels copy twice. A read the kernel refuses (a ptrace policy, a
// container without CAP_SYS_PTRACE across users) is written in the rank's control line before
// its done, and every rank then raises the same Error naming the rank and the errno once all
// are done: never a hang, and no rank writes anything but its own output.
//
// Resumable like every collective of the engine (engine.hpp): advance() moves what it can and
// never blocks, so non-blocking and persistent calls work too; one communicator's single-copy
// calls run one after the other, in the order they were started (the posts' seq).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/node_memory.hpp"
#include "exec/params.hpp"
#include "schedule/build.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/block.hpp"

namespace toroid::exec {

// A staged call copies p stages' worth at most into each rank's output.
inline constexpr std::size_t kStagedReadBytes = 256 * 1024;
// Whether a call of `count` elements of `elem_size` bytes over `size` ranks is small enough to
// stage (what each rank stages: all-gather its block, at most count/size + 1 elements).
bool small_enough_to_stage(Collective c, std::uint64_t count, std::size_t elem_size, int size);
// Whether it takes the staged path: it fits, over 3 ranks or more. At 2 ranks recursive doubling
// is one exchange too, and measured faster (128 B - 8 KiB: 0.3-2.1 us against 0.4-2.4 us), so
// small calls there run their schedule, whatever their memory.
bool takes_staged_path(Collective c, std::uint64_t count, std::size_t elem_size, int size);

// Whether an alltoallv over `size` ranks can publish its layout in a stage (3 words a rank).
bool layout_fits_stage(int size);

// The path an `auto` collective over a whole communicator on one node takes: its schedule, the
// staged path (small calls from 3 ranks, any memory), single-copy (`owned`: this rank's input
// and output are toroid's buffers) or, for an all-to-all whose buffers are not, remote reads.
// From the count, type and rank count alone but for `owned`, so alike on every rank wherever
// every rank's memory is alike (an all-to-all: whatever the memory; the others wait for each
// other otherwise, single_copy.hpp). `varying`: an alltoallv (count: this rank's input).
enum class NodePath { schedule, staged, single_copy, remote_reads };
NodePath node_path(Collective c, std::uint64_t count, std::size_t elem_size, int size, bool owned,
                   bool varying);
std::string_view to_string(NodePath p);

struct SingleCopyCall {
  Collective collective = Collective::allreduce;
  std::uint64_t count = 0;  // the whole vector's elements (alltoallv: this rank's input's)
  // This rank's input and output where they are toroid's (all-gather: its block; in place: in
  // out); id 0: not toroid's (an all-to-all's remote reads).
  SharedPlace in, out;
  bool in_place = false;
  int rank = 0, size = 1;  // in the communicator, which is all on this node
  bool staged = false;     // the staged path (small calls, any memory)
  // This rank's input (all-gather: its block) and output in its own address space: what the
  // staged path copies, and what an all-to-all's peers read remotely.
  const std::byte* in_data = nullptr;
  std::byte* out_data = nullptr;
  // An alltoallv's blocks on this rank (offsets filled in); null for every other collective.
  std::shared_ptr<const schedule::VarBlocks> blocks;
  // An all-to-all: where the ranks' buffers are not all in one allocation of toroid's, every
  // rank reads its peers where their buffers are (remote reads above).
  bool remote_reads = false;
};

class SingleCopy {
 public:
  // `may_fall_back`: where the ranks' buffers are not from one allocation each, finish without
  // touching anything and say so (fell_back: a blocking call runs the schedule instead);
  // otherwise that is an InvalidArgument on every rank (a non-blocking call cannot change its
  // place among the collectives in flight).
  SingleCopy(NodeMemory& memory, const SingleCopyCall& call, const ExecParams& params,
             bool may_fall_back);
  void restart();  // before each start of the collective
  // Moves what it can; whether anything moved. Throws InvalidArgument on every rank alike when
  // the ranks' calls do not match.
  bool advance();
  bool finished() const noexcept { return phase_ == Phase::finished; }
  bool fell_back() const noexcept { return fell_back_; }
  bool started() const noexcept { return phase_ != Phase::queued; }
  std::string waiting() const;  // the watchdog's lines: who this rank waits for

 private:
  enum class Phase { queued, entering, working, leaving, finished };
  bool enter();
  void check_layouts() const;
  void prefetch_peers() const;
  const std::uint64_t* layout_of(int rank) const {
    return reinterpret_cast<const std::uint64_t*>(memory_.stage(memory_.local_of(rank), seq_));
  }
  const std::byte* stage_input_of(int rank) const;
  bool work();
  bool work_alltoall();
  // Copies `bytes` from `from` in rank j's process to `to` here; false (with failed_errno_) when
  // the kernel refuses.
  bool read_remote(int j, std::byte* to, const std::byte* from, std::size_t bytes);
  // One copy of the work: with non-temporal stores when the call writes kStreamBytes or more.
  void put(std::byte* dst, const std::byte* src, std::size_t bytes) const;
  void work_staged();
  bool leave();
  // (Inline: the checks call them p² times.)
  const CallPost& post_of(int rank) const {
    return memory_.control(memory_.local_of(rank)).post[seq_ % 2];
  }

  NodeMemory& memory_;
  SingleCopyCall call_;
  ExecParams params_;
  bool may_fall_back_;
  Phase phase_ = Phase::queued;
  bool fell_back_ = false;
  std::uint64_t seq_ = 0;
  std::uint64_t at_ = 0;  // work: elements of this rank's block (all-gather, all-to-all: blocks)
  bool streams_ = false;  // put() streams
  // This call reads its peers by process_vm_readv: in_ holds their addresses, each in its own
  // process (the post's pid, stable until the call ends).
  bool remote_ = false;
  bool all_in_stage_ = false;  // an alltoallv whose every rank's input is in its stage
  int failed_errno_ = 0;       // a remote read the kernel refused
  Block mine_;
  std::vector<const std::byte*> in_;  // by communicator rank, in this rank's address space
  std::vector<std::byte*> out_;
  std::shared_ptr<NodeAllocation> in_held_, out_held_;  // mapped while the call works on them
};

}  // namespace toroid::exec
