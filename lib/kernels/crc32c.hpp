// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, as iSCSI, ext4 and SSE4.2 define it):
// the checksum of checkpoint sections. Two forms of one function, chosen by the kernels' level
// (kernels/isa.hpp): the CPU's crc32 instruction (SSE4.2, which every x86-64 level above scalar
// implies; crc32c_sse42.cpp, the only file built with -msse4.2) and a table everywhere else
// (TOROID_ISA=scalar, other CPUs). Both give the same values (tested against the standard's
// check values and each other).
#pragma once

#include <cstddef>
#include <cstdint>

namespace toroid::kernels {

// The CRC of `bytes` more bytes after data whose CRC is `crc` (0 to start):
// crc32c(crc32c(0, a), b) == crc32c(0, a followed by b).
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t bytes);
// The CRC of a followed by b, from the CRC of each and b's length: how runs written by
// different ranks join into one section's CRC without moving their bytes. O(log b_bytes).
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t b_bytes);

// The two forms, for tests; the instruction form is null where the CPU or build lacks it.
std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t bytes);
using Crc32cFunction = std::uint32_t (*)(std::uint32_t, const void*, std::size_t);
Crc32cFunction crc32c_instruction();

}  // namespace toroid::kernels
