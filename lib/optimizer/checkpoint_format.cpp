#include "optimizer/checkpoint_format.hpp"

#include <fmt/format.h>

#include <cstring>

#include "kernels/crc32c.hpp"
#include "toroid/error.hpp"

namespace toroid::optimizer::checkpoint {
namespace {

constexpr char kMagic[8] = {'T', 'O', 'R', 'O', 'I', 'D', 'C', 'K'};
constexpr std::uint32_t kNameLimit = 1u << 20;  // longer is damage, not a name

struct Writer {
  std::vector<char> bytes;
  void write(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    bytes.insert(bytes.end(), c, c + n);
  }
  template <class T>
  void put(const T& v) {
    write(&v, sizeof v);
  }
};

// Reads from the file and keeps every byte read, for the header's checksum.
struct Reader {
  std::FILE* file;
  std::vector<char> bytes;
  bool ok = true;
  void read(void* p, std::size_t n) {
    ok = ok && std::fread(p, 1, n, file) == n;
    if (ok) bytes.insert(bytes.end(), static_cast<char*>(p), static_cast<char*>(p) + n);
  }
  template <class T>
  T get() {
    T v{};
    read(&v, sizeof v);
    return v;
  }
};

}  // namespace

std::uint64_t Header::elements() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n += t.elements;
  return n;
}

std::size_t Header::bytes() const {
  std::size_t n =
      sizeof kMagic + 2 * sizeof(std::uint32_t) + sizeof(std::int64_t) + 2 * sizeof(std::uint64_t);
  for (const auto& t : tensors) n += sizeof(std::uint32_t) + t.name.size() + sizeof(std::uint64_t);
  if (version >= 2) n += (sections() + 1) * sizeof(std::uint32_t);
  return n;
}

std::vector<char> encode(const Header& h) {
  Writer out;
  out.write(kMagic, sizeof kMagic);
  out.put(kVersion);
  out.put(static_cast<std::uint32_t>(h.kind));
  out.put(h.steps);
  out.put(h.arrays);
  out.put(static_cast<std::uint64_t>(h.tensors.size()));
  for (const auto& t : h.tensors) {
    out.put(static_cast<std::uint32_t>(t.name.size()));
    out.write(t.name.data(), t.name.size());
    out.put(t.elements);
  }
  for (const std::uint32_t c : h.checksums) out.put(c);
  out.put(kernels::crc32c(0, out.bytes.data(), out.bytes.size()));
  return std::move(out.bytes);
}

Header read_header(std::FILE* file, const std::string& path) {
  Reader in{file, {}};
  char magic[sizeof kMagic];
  in.read(magic, sizeof magic);
  if (!in.ok || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw InvalidArgument(
        fmt::format("checkpoint: '{}' is not a toroid optimizer checkpoint", path));
  Header h;
  h.version = in.get<std::uint32_t>();
  if (!in.ok || h.version < 1 || h.version > kVersion)
    throw InvalidArgument(
        fmt::format("checkpoint: '{}' has format version {}, this build reads 1 to {}", path,
                    h.version, kVersion));
  const auto damaged = [&] {
    return InvalidArgument(fmt::format(
        "checkpoint: '{}' is damaged: {}", path,
        h.version >= 2 ? "the checksum of its header does not match" : "its header is cut short"));
  };
  h.kind = static_cast<OptimizerKind>(in.get<std::uint32_t>());
  h.steps = in.get<std::int64_t>();
  h.arrays = in.get<std::uint64_t>();
  const auto tensors = in.get<std::uint64_t>();
  // Sizes read from a damaged header must not drive the reads below: bound them by the file.
  if (!in.ok || h.arrays > 8 || tensors > (1u << 26)) throw damaged();
  for (std::uint64_t t = 0; in.ok && t < tensors; ++t) {
    const auto len = in.get<std::uint32_t>();
    if (!in.ok || len > kNameLimit) throw damaged();
    TensorEntry e;
    e.name.resize(len);
    in.read(e.name.data(), len);
    e.elements = in.get<std::uint64_t>();
    h.tensors.push_back(std::move(e));
  }
  if (h.version >= 2) {
    for (std::size_t s = 0; in.ok && s < h.sections(); ++s)
      h.checksums.push_back(in.get<std::uint32_t>());
    const std::uint32_t computed = kernels::crc32c(0, in.bytes.data(), in.bytes.size());
    const auto stored = in.get<std::uint32_t>();
    if (!in.ok || stored != computed) throw damaged();
  }
  if (!in.ok) throw damaged();
  return h;
}

std::string section_name(OptimizerKind kind, std::size_t array, const std::string& tensor) {
  const bool momentum = kind == OptimizerKind::sgd || kind == OptimizerKind::lars;
  const char* what = array == 0   ? "weights"
                     : momentum   ? "momentum"
                     : array == 1 ? "first moment"
                                  : "second moment";
  return fmt::format("{} of '{}'", what, tensor);
}

}  // namespace toroid::optimizer::checkpoint
