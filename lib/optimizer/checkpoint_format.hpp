// The checkpoint file's header, its checksums and the names of its sections. No MPI and no
// data here: checkpoint.cpp moves the bytes, checkpoint_file.cpp owns the file.
//
// Format version 2 (little-endian, as the host writes it; no padding anywhere):
//
//   header   "TOROIDCK"  u32 version  u32 optimizer kind  i64 steps  u64 state arrays  u64 tensors
//            per tensor: u32 name length, name bytes, u64 elements
//            u32 checksum per data section, in file order          (version 2 only)
//            u32 checksum of every header byte before it           (version 2 only)
//   data     section 0: weights of tensor 0 | tensor 1 | ...       (f32, registration order)
//            section 1: state array 0 of tensor 0 | tensor 1 | ...  (sgd/lars: momentum,
//            section 2: state array 1 ...                            adam family: m, then v)
//
// A *data section* is one tensor's run inside one of those arrays, so a flipped byte is named
// by what it damaged ("second moment of 'fc2.weight'"). Checksums are CRC-32C
// (kernels/crc32c.hpp): the CPU computes it with one instruction per 8 bytes, and the CRCs of
// runs written by different ranks join into a section's without moving their bytes. Version 1
// is the same layout without the checksums; it still loads, unverified.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "toroid/optimizer.hpp"

namespace toroid::optimizer::checkpoint {

constexpr std::uint32_t kVersion = 2;

struct TensorEntry {
  std::string name;
  std::uint64_t elements = 0;
};

struct Header {
  std::uint32_t version = kVersion;
  OptimizerKind kind = OptimizerKind::sgd;
  std::int64_t steps = 0;
  std::uint64_t arrays = 0;  // state arrays
  std::vector<TensorEntry> tensors;
  // Version 2: one CRC-32C per data section, section-major: (1 + arrays) × tensors.
  std::vector<std::uint32_t> checksums;

  std::size_t sections() const { return (1 + arrays) * tensors.size(); }
  std::uint64_t elements() const;  // of one array (every tensor)
  std::size_t bytes() const;       // of the header in the file
  std::size_t file_bytes() const { return bytes() + (1 + arrays) * elements() * sizeof(float); }
};

// The bytes of a version-2 header, its own checksum last.
std::vector<char> encode(const Header& header);

// Reads the header at the start of `file` and checks it is whole (the magic, a version this
// build reads, and for version 2 its checksum). Throws InvalidArgument naming `path`.
Header read_header(std::FILE* file, const std::string& path);

// Array 0 is the weights, 1 + a state array a: "weights of 'fc1.weight'", "second moment
// of 'embedding'" ...
std::string section_name(OptimizerKind kind, std::size_t array, const std::string& tensor);

}  // namespace toroid::optimizer::checkpoint
