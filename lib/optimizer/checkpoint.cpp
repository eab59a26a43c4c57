// Checkpoints that do not depend on the rank count or the bucket layout, written and read by
// every rank in parallel, all or nothing, and verified before anything is loaded.
//
// Terms: a *run* is a stretch of one tensor that this rank moves, in every array of the file
// (weights, then each state array; layout in checkpoint_format.hpp). Sharded, a rank's runs are
// the pieces of its own shard of every bucket, so the ranks' runs tile the file once; replicated
// (every rank holds everything), whole buckets are dealt round robin over the ranks.
//
//   file:   | header | weights: t0 | t1 | t2 ... | m: t0 | t1 ... | v: t0 | t1 ... |
//   runs:            |r0|r1|r0 |r1|r0|r1 ...      |r0|r1|r0 ...    (rank of each run, sharded)
//
// Save: each rank computes the CRC of its runs, rank 0 joins them into one CRC per data
// section and writes the header, every rank writes its runs into `path.saving`, then the file
// is synced and renamed over `path` (checkpoint_file.hpp). Load: rank 0 checks the header;
// every rank reads its runs twice, first only to checksum them (rank 0 compares the joined
// CRCs, so a damaged file changes nothing), then into place; the weights are then all-gathered
// (replicated: each bucket and its state broadcast from the rank it was dealt to).
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "kernels/crc32c.hpp"
#include "mpi_base/agreement.hpp"
#include "optimizer/checkpoint_file.hpp"
#include "optimizer/checkpoint_format.hpp"
#include "optimizer/impl.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid {
namespace {

using namespace optimizer::checkpoint;

struct Run {
  std::size_t bucket = 0;
  std::size_t tensor = 0, tensor_offset = 0, count = 0;
  std::size_t state_at = 0;  // first element inside this rank's state arrays
};

std::vector<Run> runs_of(const ShardedOptimizer::Impl& s) {
  std::vector<Run> runs;
  const auto& buckets = s.layout().buckets;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (!s.sharded() && static_cast<int>(i % s.comm.size()) != s.comm.rank()) continue;
    const optimizer::Bucket& b = buckets[i];
    for (const auto& piece : b.own) {
      runs.push_back(
          {i, piece.tensor, piece.tensor_offset, piece.count, b.state_offset + piece.offset});
    }
  }
  return runs;
}

Header header_of(const ShardedOptimizer::Impl& s) {
  Header h;
  h.kind = s.config.kind;
  h.steps = s.steps;
  h.arrays = s.state.size();
  for (const auto& p : s.params) h.tensors.push_back({p.name, p.weights.size()});
  return h;
}

// Where a run lies in array `array` (0: weights, 1 + a: state array a) of the file.
struct Places {
  std::size_t header = 0, elements = 0;
  std::vector<std::size_t> starts;
  Places(const Header& h, const ShardedOptimizer::Impl& s)
      : header(h.bytes()), elements(h.elements()), starts(s.registration_starts()) {}
  std::size_t at(std::size_t array, const Run& r) const {
    return header + (array * elements + starts[r.tensor] + r.tensor_offset) * sizeof(float);
  }
};

// `crcs`: the CRC of each run in each array (array-major, as extents_of lists them), joined
// across ranks into one CRC per data section in file order (on rank 0; empty elsewhere).
std::vector<std::uint32_t> join_checksums(MPI_Comm comm, const Header& h,
                                          const std::vector<Run>& runs,
                                          const std::vector<std::uint32_t>& crcs) {
  constexpr int kFields = 4;  // section, first element, elements, crc
  std::vector<std::uint64_t> mine;
  for (std::size_t a = 0; a <= h.arrays; ++a)
    for (std::size_t i = 0; i < runs.size(); ++i)
      mine.insert(mine.end(), {a * h.tensors.size() + runs[i].tensor, runs[i].tensor_offset,
                               runs[i].count, crcs[a * runs.size() + i]});
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? size : 0), displs(counts.size());
  mpi_check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm), "MPI_Gather");
  std::size_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i)
    displs[i] = static_cast<int>(total), total += static_cast<std::size_t>(counts[i]);
  std::vector<std::uint64_t> all(total);
  mpi_check(MPI_Gatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
                        MPI_UINT64_T, 0, comm),
            "MPI_Gatherv");
  if (rank != 0) return {};
  std::vector<const std::uint64_t*> records;
  for (std::size_t i = 0; i < total; i += kFields) records.push_back(&all[i]);
  std::sort(records.begin(), records.end(), [](const std::uint64_t* x, const std::uint64_t* y) {
    return x[0] != y[0] ? x[0] < y[0] : x[1] < y[1];
  });
  std::vector<std::uint32_t> joined(h.sections(), 0);  // 0: the CRC of nothing
  for (const std::uint64_t* r : records)
    joined[r[0]] = kernels::crc32c_combine(joined[r[0]], static_cast<std::uint32_t>(r[3]),
                                           r[2] * sizeof(float));
  return joined;
}

// Each run of each array at its place in the file and in memory: the weights in the
// parameters, the state in this rank's state arrays (array-major).
std::vector<Extent> extents_of(ShardedOptimizer::Impl& s, const Header& h,
                               const std::vector<Run>& runs) {
  const Places places(h, s);
  std::vector<Extent> extents;
  for (std::size_t a = 0; a <= h.arrays; ++a)
    for (const Run& r : runs) {
      float* data = a == 0 ? s.params[r.tensor].weights.data() + r.tensor_offset
                           : s.state[a - 1].data() + r.state_at;
      extents.push_back({places.at(a, r), reinterpret_cast<char*>(data), r.count * sizeof(float)});
    }
  return extents;
}

// Rank 0: the header at the start of `path`, checked against this optimizer and the file's
// length.
Header read_matching_header(const ShardedOptimizer::Impl& s, const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f)
    throw InvalidArgument(fmt::format("checkpoint: cannot open '{}' for reading on rank 0: {}",
                                      path, std::strerror(errno)));
  Header h = read_header(f.get(), path);
  if (optimizer::state_arrays(h.kind) != optimizer::state_arrays(s.config.kind) ||
      h.arrays != s.state.size() ||
      (h.kind == OptimizerKind::lamb) != (s.config.kind == OptimizerKind::lamb))
    throw InvalidArgument(fmt::format("checkpoint: '{}' holds {} state, this optimizer is {}", path,
                                      to_string(h.kind), to_string(s.config.kind)));
  if (h.tensors.size() != s.params.size())
    throw InvalidArgument(fmt::format("checkpoint: '{}' has {} parameters, this optimizer has {}",
                                      path, h.tensors.size(), s.params.size()));
  for (std::size_t t = 0; t < s.params.size(); ++t) {
    const Parameter& p = s.params[t];
    if (h.tensors[t].name != p.name || h.tensors[t].elements != p.weights.size())
      throw InvalidArgument(
          fmt::format("checkpoint: '{}' parameter {} is '{}' with {} elements, this optimizer's is "
                      "'{}' with {}",
                      path, t, h.tensors[t].name, h.tensors[t].elements, p.name, p.weights.size()));
  }
  long size = -1;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) size = std::ftell(f.get());
  if (size < 0 || static_cast<std::size_t>(size) != h.file_bytes())
    throw InvalidArgument(
        fmt::format("checkpoint: '{}' has {} bytes, expected {}", path, size, h.file_bytes()));
  return h;
}

// Rank 0: the first data section whose CRC differs from the header's.
void verify(const ShardedOptimizer::Impl& s, const Header& h,
            const std::vector<std::uint32_t>& computed, const std::string& path) {
  for (std::size_t sec = 0; sec < h.sections(); ++sec)
    if (computed[sec] != h.checksums[sec])
      throw InvalidArgument(fmt::format(
          "checkpoint: '{}' is damaged: the checksum of the {} does not match (nothing was "
          "loaded)",
          path,
          section_name(h.kind, sec / h.tensors.size(), s.params[sec % h.tensors.size()].name)));
}

// Every rank names the same, non-empty file (each writes or reads its part of it).
void check_path(MPI_Comm comm, const std::string& path, const char* call) {
  const std::string root_path = toroid::broadcast_text(comm, path, 0);
  toroid::run_agreed(comm, [&] {
    int rank = 0;
    mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    if (path.empty())
      throw InvalidArgument(fmt::format("{}: the path is empty on rank {}", call, rank));
    if (path != root_path)
      throw InvalidArgument(
          fmt::format("{}: rank {} names '{}' and rank 0 '{}': every rank must pass the same path",
                      call, rank, path, root_path));
  });
}

void bcast(void* data, std::size_t count, MPI_Datatype type, int root, MPI_Comm comm) {
  mpi_check(MPI_Bcast(data, static_cast<int>(count), type, root, comm), "MPI_Bcast");
}

}  // namespace

void ShardedOptimizer::save(const std::string& path) {
  Impl& s = *impl_;
  const MPI_Comm comm = s.comm.mpi_comm();
  check_path(comm, path, "ShardedOptimizer::save");
  const std::vector<Run> runs = runs_of(s);
  Header h = header_of(s);
  std::vector<Extent> extents = extents_of(s, h, runs);
  std::vector<std::uint32_t> crcs;
  for (const Extent& e : extents) crcs.push_back(kernels::crc32c(0, e.data, e.bytes));
  h.checksums = join_checksums(comm, h, runs, crcs);
  std::vector<char> header;
  if (s.comm.rank() == 0) {
    header = encode(h);
    extents.push_back({0, header.data(), header.size()});
  }
  SharedFile file(comm, path, SharedFile::Mode::save);
  file.write(extents);
  file.commit();
}

void ShardedOptimizer::load(const std::string& path) {
  Impl& s = *impl_;
  const bool root = s.comm.rank() == 0;
  const MPI_Comm comm = s.comm.mpi_comm();
  check_path(comm, path, "ShardedOptimizer::load");
  Header file_header;
  toroid::run_agreed(comm, [&] {
    if (root) file_header = read_matching_header(s, path);
  });
  // Every rank's view of the file: this optimizer's header at the file's version.
  Header h = header_of(s);
  h.version = file_header.version;
  h.steps = file_header.steps;
  bcast(&h.version, 1, MPI_UINT32_T, 0, comm);
  bcast(&h.steps, 1, MPI_INT64_T, 0, comm);

  // Two passes over this rank's runs: the first only checksums them (through a small buffer,
  // so a failed check changes nothing and no rank holds a second copy of its shard), the
  // second reads them into place.
  const std::vector<Run> runs = runs_of(s);
  const std::vector<Extent> extents = extents_of(s, h, runs);
  SharedFile file(comm, path, SharedFile::Mode::load);
  if (h.version >= 2) {
    const auto computed = join_checksums(comm, h, runs, file.checksums(extents));
    toroid::run_agreed(comm, [&] {
      if (root) verify(s, file_header, computed, path);
    });
  } else if (root) {
    fmt::print(stderr,
               "toroid: checkpoint: '{}' is format version 1, which has no checksums: loaded "
               "without verification (a save writes version {})\n",
               path, kVersion);
  }
  file.read(extents);

  // Every rank holds all weights and, replicated, all of the state.
  if (s.sharded()) {
    optimizer::gather_weights(s);
  } else {
    const auto& buckets = s.layout().buckets;
    std::vector<float> buf(s.layout().max_padded);
    std::vector<MPI_Request> requests;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const optimizer::Bucket& b = buckets[i];
      const int owner = static_cast<int>(i % s.comm.size());
      const bool mine = owner == s.comm.rank();
      for (const auto& piece : b.pieces)
        if (mine)
          std::memcpy(buf.data() + piece.offset, s.weights_at(piece), piece.count * sizeof(float));
      bcast(buf.data(), b.length, MPI_FLOAT, owner, comm);
      for (const auto& piece : b.pieces)
        if (!mine)
          std::memcpy(s.weights_at(piece), buf.data() + piece.offset, piece.count * sizeof(float));
      for (auto& array : s.state) {
        requests.emplace_back();
        mpi_check(MPI_Ibcast(array.data() + b.state_offset, static_cast<int>(b.padded), MPI_FLOAT,
                             owner, comm, &requests.back()),
                  "MPI_Ibcast");
      }
    }
    mpi_check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  }
  s.steps = h.steps;
}

}  // namespace toroid
