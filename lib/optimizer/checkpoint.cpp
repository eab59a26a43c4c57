// Checkpoints that do not depend on the rank count or the bucket layout: rank 0 writes (and
// reads) the full weights and optimizer state in registration order, bucket by bucket (each
// piece at its place in the file), so no rank ever holds more than one bucket beyond its own
// shard.
//
// File layout (little-endian, as the host writes it):
//   "TOROIDCK"  u32 version  u32 optimizer kind  i64 steps  u64 state arrays  u64 tensors
//   per tensor: u32 name length, name bytes, u64 elements
//   weights of every tensor in order (f32), then each state array over the same elements
//   (sgd/lars: momentum; adam/adamw/lamb: first moment, second moment). No padding.
#include <fmt/format.h>
#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "api/agreement.hpp"
#include "core/mpi_check.hpp"
#include "optimizer/impl.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"

namespace toroid {
namespace {

constexpr char kMagic[8] = {'T', 'O', 'R', 'O', 'I', 'D', 'C', 'K'};
constexpr std::uint32_t kVersion = 1;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Tracks whether every read or write of rank 0 succeeded; ranks keep running the collectives
// either way and agree on the outcome at the end.
struct Stream {
  File file;
  bool ok = true;
  void write(const void* p, std::size_t bytes) {
    ok = ok && std::fwrite(p, 1, bytes, file.get()) == bytes;
  }
  void read(void* p, std::size_t bytes) { ok = ok && std::fread(p, 1, bytes, file.get()) == bytes; }
  void seek(std::size_t at) {
    ok = ok && std::fseek(file.get(), static_cast<long>(at), SEEK_SET) == 0;
  }
  template <class T>
  void put(const T& v) {
    write(&v, sizeof v);
  }
  template <class T>
  T get() {
    T v{};
    read(&v, sizeof v);
    return v;
  }
};

std::size_t header_bytes(const ShardedOptimizer::Impl& s) {
  std::size_t n =
      sizeof kMagic + 2 * sizeof(std::uint32_t) + sizeof(std::int64_t) + 2 * sizeof(std::uint64_t);
  for (const auto& p : s.params) n += sizeof(std::uint32_t) + p.name.size() + sizeof(std::uint64_t);
  return n;
}

std::size_t file_bytes(const ShardedOptimizer::Impl& s) {
  return header_bytes(s) + (1 + s.state.size()) * s.layout().total * sizeof(float);
}

// Where element `offset` of tensor `tensor` lies in section `section` (0: weights, 1 + a:
// state array a) of the file.
struct Places {
  std::size_t header = 0, total = 0;
  std::vector<std::size_t> starts;
  explicit Places(const ShardedOptimizer::Impl& s)
      : header(header_bytes(s)), total(s.layout().total), starts(s.registration_starts()) {}
  std::size_t at(std::size_t section, const optimizer::Piece& piece) const {
    return header + (section * total + starts[piece.tensor] + piece.tensor_offset) * sizeof(float);
  }
};

File open(const std::string& path, const char* mode, const char* purpose) {
  File f(std::fopen(path.c_str(), mode));
  if (!f)
    throw InvalidArgument(fmt::format("checkpoint: cannot open '{}' for {}: {}", path, purpose,
                                      std::strerror(errno)));
  return f;
}

// Rank 0: checks a file's header against this optimizer; leaves the stream at the weights.
std::int64_t read_header(const ShardedOptimizer::Impl& s, Stream& in, const std::string& path) {
  char magic[sizeof kMagic];
  in.read(magic, sizeof magic);
  if (!in.ok || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw InvalidArgument(
        fmt::format("checkpoint: '{}' is not a toroid optimizer checkpoint", path));
  const auto version = in.get<std::uint32_t>();
  if (version != kVersion)
    throw InvalidArgument(fmt::format("checkpoint: '{}' has format version {}, this build reads {}",
                                      path, version, kVersion));
  const auto kind = static_cast<OptimizerKind>(in.get<std::uint32_t>());
  const auto steps = in.get<std::int64_t>();
  const auto arrays = in.get<std::uint64_t>();
  const auto tensors = in.get<std::uint64_t>();
  if (optimizer::state_arrays(kind) != optimizer::state_arrays(s.config.kind) ||
      arrays != s.state.size() ||
      (kind == OptimizerKind::lamb) != (s.config.kind == OptimizerKind::lamb))
    throw InvalidArgument(fmt::format("checkpoint: '{}' holds {} state, this optimizer is {}", path,
                                      to_string(kind), to_string(s.config.kind)));
  if (tensors != s.params.size())
    throw InvalidArgument(fmt::format("checkpoint: '{}' has {} parameters, this optimizer has {}",
                                      path, tensors, s.params.size()));
  for (std::size_t t = 0; t < s.params.size(); ++t) {
    const auto len = in.get<std::uint32_t>();
    std::string name(in.ok && len < (1u << 20) ? len : 0, '\0');
    in.read(name.data(), name.size());
    const auto elements = in.get<std::uint64_t>();
    const Parameter& p = s.params[t];
    if (!in.ok || name != p.name || elements != p.weights.size())
      throw InvalidArgument(
          fmt::format("checkpoint: '{}' parameter {} is '{}' with {} elements, this optimizer's is "
                      "'{}' with {}",
                      path, t, name, elements, p.name, p.weights.size()));
  }
  if (std::fseek(in.file.get(), 0, SEEK_END) != 0) in.ok = false;
  const long size = std::ftell(in.file.get());
  if (!in.ok || size < 0 || static_cast<std::size_t>(size) != file_bytes(s))
    throw InvalidArgument(
        fmt::format("checkpoint: '{}' has {} bytes, expected {}", path, size, file_bytes(s)));
  std::fseek(in.file.get(), static_cast<long>(header_bytes(s)), SEEK_SET);
  return steps;
}

void bcast(void* data, std::size_t count, MPI_Datatype type, MPI_Comm comm) {
  toroid::mpi_check(MPI_Bcast(data, static_cast<int>(count), type, 0, comm), "MPI_Bcast");
}

}  // namespace

void ShardedOptimizer::save(const std::string& path) {
  Impl& s = *impl_;
  const bool root = s.comm.rank() == 0;
  const MPI_Comm comm = s.comm.mpi_comm();
  Stream out;
  api::run_agreed(comm, [&] {
    if (root) out.file = open(path, "wb", "writing");
  });
  if (root) {
    out.write(kMagic, sizeof kMagic);
    out.put(kVersion);
    out.put(static_cast<std::uint32_t>(s.config.kind));
    out.put(static_cast<std::int64_t>(s.steps));
    out.put(static_cast<std::uint64_t>(s.state.size()));
    out.put(static_cast<std::uint64_t>(s.params.size()));
    for (const auto& p : s.params) {
      out.put(static_cast<std::uint32_t>(p.name.size()));
      out.write(p.name.data(), p.name.size());
      out.put(static_cast<std::uint64_t>(p.weights.size()));
    }
    // Every rank holds all weights between steps.
    for (const auto& p : s.params) out.write(p.weights.data(), p.weights.size_bytes());
  }
  const Places places(s);
  std::vector<float> buf(s.layout().max_padded);
  for (std::size_t a = 0; a < s.state.size(); ++a)
    for (const auto& b : s.layout().buckets) {
      const float* shard = s.state[a].data() + b.state_offset;
      if (s.sharded()) {
        std::memcpy(buf.data() + b.own_begin, shard, b.shard * sizeof(float));
        allgather(buf.data() + b.own_begin, b.shard, buf.data(), b.padded, DataType::f32, s.comm);
        shard = buf.data();
      }
      if (root)
        for (const auto& piece : b.pieces) {
          out.seek(places.at(1 + a, piece));
          out.write(shard + piece.offset, piece.count * sizeof(float));
        }
    }
  if (root && std::fflush(out.file.get()) != 0) out.ok = false;
  api::run_agreed(comm, [&] {
    if (root && !out.ok)
      throw Error(fmt::format("checkpoint: writing '{}' failed: {}", path, std::strerror(errno)));
  });
}

void ShardedOptimizer::load(const std::string& path) {
  Impl& s = *impl_;
  const bool root = s.comm.rank() == 0;
  const MPI_Comm comm = s.comm.mpi_comm();
  Stream in;
  std::int64_t steps = 0;
  api::run_agreed(comm, [&] {
    if (!root) return;
    in.file = open(path, "rb", "reading");
    steps = read_header(s, in, path);
  });
  bcast(&steps, 1, MPI_INT64_T, comm);
  const Places places(s);
  std::vector<float> buf(s.layout().max_padded);
  // Bucket b of file section `section` into buf (on every rank).
  auto read_bucket = [&](std::size_t section, const optimizer::Bucket& b) {
    if (root)
      for (const auto& piece : b.pieces) {
        in.seek(places.at(section, piece));
        in.read(buf.data() + piece.offset, piece.count * sizeof(float));
      }
    bcast(buf.data(), b.length, MPI_FLOAT, comm);
  };
  for (const auto& b : s.layout().buckets) {
    read_bucket(0, b);
    for (const auto& piece : b.pieces)
      std::memcpy(s.params[piece.tensor].weights.data() + piece.tensor_offset,
                  buf.data() + piece.offset, piece.count * sizeof(float));
  }
  for (std::size_t a = 0; a < s.state.size(); ++a)
    for (const auto& b : s.layout().buckets) {
      read_bucket(1 + a, b);
      std::fill(buf.data() + b.length, buf.data() + b.padded, 0.0f);
      std::memcpy(s.state[a].data() + b.state_offset, buf.data() + b.own_begin,
                  b.shard * sizeof(float));
    }
  api::run_agreed(comm, [&] {
    if (root && !in.ok) throw Error(fmt::format("checkpoint: reading '{}' failed", path));
  });
  s.steps = steps;
}

}  // namespace toroid
