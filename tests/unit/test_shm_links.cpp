// How the shared-memory channels are sized: slot size and ring depth by ranks per node, and how
// far the deep slots shrink (or the links stay on MPI) when the node's shared-memory file system
// is short of room.
#include <catch2/catch.hpp>

#include "exec/shm_links.hpp"

using toroid::exec::ShmLinks;

namespace {
constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;
// A rank's part of the window: every sender on the node, every lane, two counter lines + slots.
std::uint64_t part(int ranks, std::size_t slot, std::uint32_t slots) {
  return static_cast<std::uint64_t>(ranks) * ShmLinks::kLanes * (128 + slot * slots);
}
}  // namespace

TEST_CASE("shm links: slots shrink with ranks per node, rings stay deep up to 8 ranks",
          "[transport]") {
  // The first 8 slots of a rank's channels within 16 MiB, counter lines included.
  CHECK(ShmLinks::slot_bytes_for(2) == 64 * KiB);
  CHECK(ShmLinks::slot_bytes_for(3) == 64 * KiB);
  CHECK(ShmLinks::slot_bytes_for(4) == 32 * KiB);
  CHECK(ShmLinks::slot_bytes_for(7) == 32 * KiB);
  CHECK(ShmLinks::slot_bytes_for(8) == 16 * KiB);
  CHECK(ShmLinks::slot_bytes_for(64) == 16 * KiB);  // the floor, over budget
  // The whole part within 128 MiB: rings 4 MiB deep up to 3 ranks, 2 MiB at 4-7, 1 MiB at 8.
  CHECK(ShmLinks::deep_slots_for(3, 64 * KiB) == 64);
  CHECK(ShmLinks::deep_slots_for(4, 32 * KiB) == 64);
  CHECK(ShmLinks::deep_slots_for(8, 16 * KiB) == 64);
  CHECK(ShmLinks::deep_slots_for(16, 16 * KiB) == 32);
  CHECK(ShmLinks::deep_slots_for(500, 16 * KiB) ==
        ShmLinks::kSlots);  // never fewer than the base ring
  for (int ranks : {2, 4, 6, 8, 16, 32}) {
    const std::size_t slot = ShmLinks::slot_bytes_for(ranks);
    CHECK(part(ranks, slot, ShmLinks::deep_slots_for(ranks, slot)) <= ShmLinks::kReserveBytes);
  }
}

TEST_CASE(
    "shm links: deep slots halve until the window takes at most half the free room, or none fit",
    "[transport]") {
  const int ranks = 4;
  const std::size_t slot = 32 * KiB;
  const std::uint64_t window64 = ranks * part(ranks, slot, 64);  // every rank's part
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 2 * window64) == 64);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 2 * window64 - 1) == 32);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 2 * ranks * part(ranks, slot, 16)) == 16);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 2 * ranks * part(ranks, slot, 8)) == 8);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 2 * ranks * part(ranks, slot, 8) - 1) == 0);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 40 * MiB) == 0);
  CHECK(ShmLinks::slots_that_fit(ranks, slot, 64, 0) == 0);
}

TEST_CASE(
    "the shared-memory links carry eight lanes, which every schedule on up to four "
    "dimensions keeps to (test_schedules_3d.cpp; api::steps_over_mpi relies on it)",
    "[shm]") {
  STATIC_REQUIRE(ShmLinks::kLanes == 8);
}
