#include "exec/tracer.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {
namespace {

constexpr int kTag = 7411;                // the trace's messages to rank 0
constexpr std::size_t kPiece = 1u << 30;  // bytes per message (an int count)
constexpr const char* kSource = "toroid, measured";

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void cannot_write(const std::string& path) {
  throw InvalidArgument(fmt::format("trace (TOROID_TRACE or Options::trace): cannot write {}: {}",
                                    path, std::strerror(errno)));
}

File open_for_writing(const std::string& path) {
  File f(std::fopen(path.c_str(), "w"));
  if (!f) cannot_write(path);
  return f;
}

bool put(std::FILE* f, std::string_view s) {
  return std::fwrite(s.data(), 1, s.size(), f) == s.size();
}

}  // namespace

namespace {
std::atomic<int> traced{0};  // communicators of this process that record a timeline
}  // namespace

std::string Tracer::path_for(const std::string& base) {
  const int n = traced.load() + 1;
  return n == 1 ? base : fmt::format("{}.{}", base, n);
}

void Tracer::check_writable(const std::string& path) {
  // Appending creates nothing that was not there: a communicator that fails later leaves no
  // empty file behind.
  std::FILE* existing = std::fopen(path.c_str(), "r");
  if (existing) std::fclose(existing);
  File f(std::fopen(path.c_str(), "a"));
  if (!f) cannot_write(path);
  f.reset();
  if (!existing) std::remove(path.c_str());
}

Tracer::Tracer(MPI_Comm comm, std::string path) : path_(std::move(path)) {
  int rank = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  timeline_.rank = rank;
  timeline_.steps.reserve(1024);
  mpi_check(MPI_Barrier(comm), "MPI_Barrier");
  ++traced;
  t0_ = std::chrono::steady_clock::now();
}

std::uint32_t Tracer::begin_call(std::string name, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (timeline_.calls.size() >= kCapacity) {
    ++timeline_.dropped;
    return kNone;
  }
  const double t = now_us();
  timeline_.calls.push_back({t, t, std::move(name), bytes});
  return static_cast<std::uint32_t>(timeline_.calls.size() - 1);
}

void Tracer::end_call(std::uint32_t call) {
  std::lock_guard lock(mutex_);
  if (call < timeline_.calls.size()) timeline_.calls[call].end_us = now_us();
}

void Tracer::step(const model::TraceStep& s) {
  std::lock_guard lock(mutex_);
  if (s.call == kNone || timeline_.steps.size() >= kCapacity) {
    ++timeline_.dropped;
    return;
  }
  timeline_.steps.push_back(s);
}

void Tracer::write(MPI_Comm comm) noexcept {
  const std::string mine = model::chrome_trace_events(timeline_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  try {
    if (finalized) {
      const std::string path = fmt::format("{}.rank{}", path_, timeline_.rank);
      File f = open_for_writing(path);
      put(f.get(), model::chrome_trace_file({mine}, kSource, timeline_.dropped));
      fmt::print(stderr,
                 "toroid: rank {}: MPI was finalized before the communicator's end, so its trace "
                 "is in {} (not gathered into {})\n",
                 timeline_.rank, path, path_);
      return;
    }
    int rank = 0, size = 1;
    mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    unsigned long long dropped = 0, mine_dropped = timeline_.dropped;
    mpi_check(MPI_Reduce(&mine_dropped, &dropped, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm),
              "MPI_Reduce");
    if (rank != 0) {
      unsigned long long n = mine.size();
      mpi_check(MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, kTag, comm), "MPI_Send");
      for (std::size_t at = 0; at < mine.size(); at += kPiece)
        mpi_check(MPI_Send(mine.data() + at, static_cast<int>(std::min(kPiece, mine.size() - at)),
                           MPI_CHAR, 0, kTag, comm),
                  "MPI_Send");
      return;
    }
    // Rank 0 writes as the parts arrive: the head, each rank's events, the tail.
    File f = open_for_writing(path_);
    bool ok = put(f.get(), model::chrome_trace_head()) && put(f.get(), mine);
    std::string theirs;
    for (int r = 1; r < size; ++r) {
      unsigned long long n = 0;
      mpi_check(MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, r, kTag, comm, MPI_STATUS_IGNORE),
                "MPI_Recv");
      theirs.resize(n);
      for (std::size_t at = 0; at < n; at += kPiece)
        mpi_check(
            MPI_Recv(theirs.data() + at, static_cast<int>(std::min<std::size_t>(kPiece, n - at)),
                     MPI_CHAR, r, kTag, comm, MPI_STATUS_IGNORE),
            "MPI_Recv");
      if (n > 0) ok = ok && put(f.get(), ",\n") && put(f.get(), theirs);
    }
    ok = ok && put(f.get(), model::chrome_trace_tail(kSource, dropped));
    if (!ok || std::fflush(f.get()) != 0)
      fmt::print(stderr, "toroid: rank 0: writing the trace {} failed: {}\n", path_,
                 std::strerror(errno));
  } catch (const std::exception& e) {
    fmt::print(stderr, "toroid: rank {}: the trace was not written: {}\n", timeline_.rank,
               e.what());
  }
}

}  // namespace toroid::exec
