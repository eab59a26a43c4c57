#include "exec/mpi_transfer.hpp"

#include <algorithm>
#include <vector>

#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {

using schedule::Kind;

void MpiTransfer::bind(const schedule::Step& st, const schedule::Operand& src,
                       const schedule::Destination& dst, std::size_t bytes,
                       std::size_t segment_bytes, std::size_t elem_size, std::byte* staging,
                       std::uint32_t depth, bool exact) {
  step_ = &st;
  src_ = src;
  dst_ = dst;
  bytes_ = bytes;
  elem_size_ = elem_size;
  exact_ = exact;
  seg_bytes_ = exact ? std::max<std::size_t>(bytes, 1)
                     : std::max<std::size_t>(1, segment_bytes / elem_size) * elem_size;
  nseg_ = exact ? 1 : static_cast<std::uint32_t>((bytes + seg_bytes_ - 1) / seg_bytes_);
  staging_ = staging;
  depth_ = std::max<std::uint32_t>(1, depth);
  if (st.kind != Kind::send) arrived_.assign(nseg_, 0);
  reset();
}

void MpiTransfer::reset() {
  posted_ = sends_done_ = prefix_ = 0;
  ready_ = 0;
  mismatch_ = {};
  probing_ = false;
  std::fill(arrived_.begin(), arrived_.end(), std::uint8_t{0});
}

bool MpiTransfer::finished() const noexcept {
  return step_->kind == Kind::send ? sends_done_ == nseg_ : prefix_ == nseg_;
}

namespace {

// Calls `post(base, count, type)` for bytes [at, at + len) of a chunk: as bytes from their
// address when contiguous, else as one derived type of the segment's runs from the buffer's.
// Returns what post returned (an MPI error code).
template <class Byte, class Post>
int post_runs(const schedule::Runs<Byte>& c, std::size_t at, std::size_t len, Post&& post) {
  if (!c.gathered()) return post(c.base + at, static_cast<int>(len), MPI_BYTE);
  std::vector<int> lengths;
  std::vector<MPI_Aint> places;
  c.each(at, len, [&](Byte* p, std::size_t, std::size_t n) {
    lengths.push_back(static_cast<int>(n));
    places.push_back(static_cast<MPI_Aint>(p - c.base));
  });
  MPI_Datatype runs = MPI_DATATYPE_NULL;
  mpi_check(MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(),
                                     places.data(), MPI_BYTE, &runs),
            "MPI_Type_create_hindexed");
  mpi_check(MPI_Type_commit(&runs), "MPI_Type_commit");
  // Freeing a type is allowed while an operation that uses it is pending.
  const int rc = post(c.base, 1, runs);
  MPI_Type_free(&runs);
  return rc;
}

}  // namespace

void MpiTransfer::post(RequestTable& table, MPI_Comm comm, std::uint32_t k) {
  const std::size_t at = static_cast<std::size_t>(k) * seg_bytes_;
  const std::size_t len = seg_len(k);
  const schedule::Step& st = *step_;
  MPI_Request* req = table.post(this, k);
  switch (st.kind) {
    case Kind::send:
      mpi_check(post_runs(src_, at, len,
                          [&](const std::byte* p, int n, MPI_Datatype type) {
                            return MPI_Isend(p, n, type, st.peer, st.tag, comm, req);
                          }),
                "MPI_Isend");
      break;
    case Kind::recv:
      mpi_check(post_runs(dst_, at, len,
                          [&](std::byte* p, int n, MPI_Datatype type) {
                            return MPI_Irecv(p, n, type, st.peer, st.tag, comm, req);
                          }),
                "MPI_Irecv");
      break;
    default:
      mpi_check(MPI_Irecv(staging_ + (k % depth_) * seg_bytes_, static_cast<int>(len), MPI_BYTE,
                          st.peer, st.tag, comm, req),
                "MPI_Irecv");
      break;
  }
  ++posted_;
}

void MpiTransfer::start(RequestTable& table, MPI_Comm comm) {
  switch (step_->kind) {
    case Kind::recv:  // straight into place: every segment at once
      if (exact_) {   // its size first: advance() probes for it (probing())
        probing_ = true;
        break;
      }
      while (posted_ < nseg_) post(table, comm, posted_);
      break;
    case Kind::recv_reduce:
      while (posted_ < std::min(nseg_, depth_)) post(table, comm, posted_);
      break;
    default:
      break;
  }
}

// An exact receive: the message, once there, received whole into place when it is the size
// expected, else into a buffer of its own, its size noted (mismatch()). Matched by MPI_Improbe
// first, so a message of another size never meets a posted receive: no truncation error, which
// MPICH's MPI_Testsome would raise through MPI_COMM_WORLD's handler (fatal by default).
bool MpiTransfer::receive_exact(RequestTable& table, MPI_Comm comm) {
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  mpi_check(MPI_Improbe(step_->peer, step_->tag, comm, &found, &message, &status), "MPI_Improbe");
  if (!found) return false;
  int got = 0;
  mpi_check(MPI_Get_count(&status, MPI_BYTE, &got), "MPI_Get_count");
  std::byte* into = dst_.base;  // contiguous: an exact schedule's receives are (alltoall.cpp)
  if (static_cast<std::size_t>(got) != bytes_) {
    mismatch_ = {true, static_cast<std::size_t>(got)};
    discard_.resize(static_cast<std::size_t>(got));
    into = discard_.data();
  }
  mpi_check(MPI_Imrecv(into, got, MPI_BYTE, &message, table.post(this, 0)), "MPI_Imrecv");
  probing_ = false;
  ++posted_;
  return true;
}

bool MpiTransfer::advance(RequestTable& table, MPI_Comm comm, std::size_t limit,
                          kernels::ReduceFn reduce) {
  if (probing_) return receive_exact(table, comm);
  bool moved = false;
  if (step_->kind == Kind::send) {
    while (posted_ < nseg_ &&
           static_cast<std::size_t>(posted_) * seg_bytes_ + seg_len(posted_) <= limit) {
      post(table, comm, posted_);
      moved = true;
    }
  } else if (step_->kind == Kind::recv_reduce) {
    while (prefix_ < nseg_ && arrived_[prefix_]) {
      const std::size_t at = static_cast<std::size_t>(prefix_) * seg_bytes_, len = seg_len(prefix_);
      if (at + len > limit) break;  // the local operand is not final yet
      const std::byte* in = staging_ + (prefix_ % depth_) * seg_bytes_;
      schedule::each_pair(dst_, src_, at, len,
                          [&](std::byte* d, const std::byte* p, std::size_t o, std::size_t n) {
                            reduce(d, p, in + o, n / elem_size_);
                          });
      ++prefix_;
      ready_ = at + len;
      if (posted_ < nseg_) post(table, comm, posted_);  // into the slot just freed
      moved = true;
    }
  }
  return moved;
}

void MpiTransfer::completed(std::uint32_t k) {
  if (step_->kind == Kind::send) {
    ++sends_done_;
    return;
  }
  arrived_[k] = 1;
  if (step_->kind != Kind::recv) return;
  while (prefix_ < nseg_ && arrived_[prefix_]) ++prefix_;
  ready_ = std::min(static_cast<std::size_t>(prefix_) * seg_bytes_, bytes_);
}

}  // namespace toroid::exec
