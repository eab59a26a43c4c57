// The shared-memory transport against MPI point-to-point: same results bit for bit for every
// algorithm, the switch works both ways, and bad values are errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "exec/shm_links.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::world_rank;
using testing::world_size;

namespace {

// How deep a slot ring is, in f32 elements, with this node's rank count (4 MiB up to 3 ranks,
// 2 MiB at 4-7, 1 MiB at 8): the cases below size their transfers past it, and no further (each
// MiB more is time at every rank count, across the emulated hosts too).
std::size_t ring_depth_floats() {
  const int local = testing::ranks_on_my_node();
  const std::size_t slot = exec::ShmLinks::slot_bytes_for(local);
  return slot * exec::ShmLinks::deep_slots_for(local, slot) / sizeof(float);
}

Options over(Transport t, SlotStores stores = SlotStores::automatic) {
  Options o;
  o.transport = t;
  o.slot_stores = stores;
  return o;
}

// What the bit-exactness cases compare: the same calls over MPI (`mpi`) and over shared memory
// with the slots written as `stores` says (`shm`).
struct MpiAndShm {
  explicit MpiAndShm(SlotStores stores)
      : mpi(MPI_COMM_WORLD, over(Transport::mpi)),
        shm(MPI_COMM_WORLD, over(Transport::shm, stores)) {}
  Communicator mpi, shm;
};

}  // namespace

TEST_CASE("transport: shared memory on one node unless mpi is forced", "[transport][mpich]") {
  Communicator over_mpi(MPI_COMM_WORLD, over(Transport::mpi));
  CHECK_FALSE(over_mpi.uses_shared_memory());
  Communicator over_shm(MPI_COMM_WORLD, over(Transport::shm));
  CHECK(over_shm.uses_shared_memory() == (testing::ranks_on_my_node() > 1));
}

TEST_CASE("transport: every algorithm gives the same bits over shared memory and over MPI",
          "[transport]") {
  // Slots written with plain stores and with non-temporal ones (a receive handed straight to the
  // next send then reduces through a scratch and streams the sum on), each taken as asked.
  const SlotStores stores = GENERATE(SlotStores::cached, SlotStores::streaming);
  INFO(to_string(stores));
  MpiAndShm both(stores);
  Communicator &a = both.mpi, &b = both.shm;
  CHECK(b.slot_stores() == (b.uses_shared_memory() ? stores : SlotStores::automatic));
  // Several slot rings' worth, an odd count, floating values whose sums depend on the order.
  const std::size_t n = 300'007;
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = 1.0f / static_cast<float>(i % 977 + 1 + world_rank());
  for (Algorithm algo : all_algorithms) {
    // auto prices the two transports' links apart, so it may choose differently on each.
    if (algo == Algorithm::mpi || algo == Algorithm::automatic ||
        !implements(algo, Collective::allreduce))
      continue;
    INFO(to_string(algo));
    std::vector<float> x(n), y(n);
    allreduce(std::span<const float>(in), std::span<float>(x), ReduceOp::sum, a, algo);
    allreduce(std::span<const float>(in), std::span<float>(y), ReduceOp::sum, b, algo);
    CHECK(all_ranks(std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0));
    // Reduce-scatter and all-gather too, where the algorithm has them.
    if (implements(algo, Collective::reduce_scatter)) {
      const Block own = block_of(n, world_size(), world_rank());
      std::vector<float> rx(own.count), ry(own.count);
      reduce_scatter(std::span<const float>(in), std::span<float>(rx), ReduceOp::max, a, algo);
      reduce_scatter(std::span<const float>(in), std::span<float>(ry), ReduceOp::max, b, algo);
      CHECK(all_ranks(rx == ry));
      std::vector<float> gx(n), gy(n);
      allgather(std::span<const float>(rx), std::span<float>(gx), a, algo);
      allgather(std::span<const float>(ry), std::span<float>(gy), b, algo);
      CHECK(all_ranks(gx == gy));
    }
  }
}

// Over shared memory a receive hands each segment straight to the send that forwards it while
// that send keeps pace, skips writing bytes nothing reads again, and falls back to writing them
// when the forwarding ring is full (here: the last rank enters 20 ms late, so its left
// neighbour's rings fill up). Chunks over 1 MiB take the non-temporal store path. With
// streamed slots every slot is written non-temporally, a relay's too (through its scratch).
TEST_CASE(
    "transport: large vectors with a late rank, in place or not, give the MPI transport's bits",
    "[transport]") {
  const SlotStores stores = GENERATE(SlotStores::cached, SlotStores::streaming);
  INFO(to_string(stores));
  MpiAndShm both(stores);
  Communicator &a = both.mpi, &b = both.shm;
  const std::size_t n = 1'200'007;  // 4.8 MB of f32: 1.2 MB chunks at 4 ranks
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i)
    in[i] = 1.0f / static_cast<float>(i % 613 + 1 + 2 * world_rank());
  // Named algorithms only: auto prices shared-memory and MPI links apart and may pick
  // different algorithms for the two communicators, which round differently.
  for (Algorithm algo : {Algorithm::ring, Algorithm::bidir_ring, Algorithm::rabenseifner,
                         Algorithm::torus2d, Algorithm::swing}) {
    for (bool in_place : {false, true}) {
      INFO(to_string(algo) << (in_place ? " in place" : ""));
      std::vector<float> x(in), y(in);
      auto run = [&](std::vector<float>& out, Communicator& c) {
        if (in_place)
          allreduce(std::span<float>(out), ReduceOp::sum, c, algo);
        else
          allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, c, algo);
      };
      run(x, a);
      if (world_rank() == world_size() - 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      run(y, b);
      CHECK(all_ranks(std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0));
    }
  }
}

// Out of place, a ring all-gather copies the rank's own block into the output along the send
// that carries it, segment by segment (bound_collective.cpp, carry_local_copies). Blocks half
// again as deep as the slot rings, a late rank (so the first sends fill their rings and wait),
// and calls back to back on other buffers: the MPI transport's bits.
TEST_CASE("transport: an all-gather's own block copied along its send, rings full, late rank",
          "[transport]") {
  const SlotStores stores = GENERATE(SlotStores::cached, SlotStores::streaming);
  INFO(to_string(stores));
  MpiAndShm both(stores);
  Communicator &a = both.mpi, &b = both.shm;
  const std::size_t own = ring_depth_floats() * 3 / 2 + 3;  // 6 MB of f32 per rank up to 3 ranks
  const std::size_t n = own * static_cast<std::size_t>(world_size());
  for (Algorithm algo : {Algorithm::ring, Algorithm::bidir_ring, Algorithm::automatic}) {
    INFO(to_string(algo));
    for (int call = 0; call < 2; ++call) {
      std::vector<float> in(own), x(n), y(n, -1.0f);
      for (std::size_t i = 0; i < own; ++i)
        in[i] = static_cast<float>(i % 1009) + 0.25f * static_cast<float>(world_rank() + call);
      allgather(std::span<const float>(in), std::span<float>(x), a, Algorithm::ring);
      if (world_rank() == world_size() - 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      allgather(std::span<const float>(in), std::span<float>(y), b, algo);
      CHECK(all_ranks(std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0));
    }
  }
}

// A ring's slot for a segment depends on its transfer's size: small transfers cycle through the
// first slots, large ones start at slot 0 and wrap around as deep a ring as there is. A sender
// moves on to its next transfer on a channel (the next ring step, or the next collective) while
// the receiver may still be reading the last one's segments from the slots it is about to
// reuse. Mixed sizes back to back, with the last rank entering each collective late, give every
// kind of hand-over.
TEST_CASE(
    "transport: back-to-back collectives of mixed sizes with a lagging rank give the MPI "
    "transport's bits") {
  const SlotStores stores = GENERATE(SlotStores::cached, SlotStores::streaming);
  INFO(to_string(stores));
  MpiAndShm both(stores);
  Communicator &a = both.mpi, &b = both.shm;
  // Ring chunks (big / p) a tenth deeper than the slot rings (4.6 MB up to 3 ranks, 2.3 MB at
  // 4-7, 1.2 MB at 8): more segments than a ring holds, so large transfers wrap.
  const std::size_t big =
      (ring_depth_floats() * 11 / 10 + 1) * static_cast<std::size_t>(world_size());
  const std::size_t sizes[] = {big, 1, 10'001, 150'001, 3, big};
  for (Algorithm algo : {Algorithm::ring, Algorithm::rabenseifner}) {
    INFO(to_string(algo));
    std::vector<std::vector<float>> ins, xs, ys;
    for (std::size_t n : sizes) {
      std::vector<float> in(n);
      for (std::size_t i = 0; i < n; ++i)
        in[i] = 1.0f / static_cast<float>(i % 331 + 1 + 3 * world_rank());
      ins.push_back(in);
      xs.emplace_back(n);
      ys.emplace_back(n);
    }
    for (std::size_t k = 0; k < ins.size(); ++k)
      allreduce(std::span<const float>(ins[k]), std::span<float>(xs[k]), ReduceOp::sum, a, algo);
    MPI_Barrier(MPI_COMM_WORLD);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (world_rank() == world_size() - 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      allreduce(std::span<const float>(ins[k]), std::span<float>(ys[k]), ReduceOp::sum, b, algo);
    }
    bool same = true;
    for (std::size_t k = 0; k < ins.size(); ++k)
      same = same && std::memcmp(xs[k].data(), ys[k].data(), xs[k].size() * sizeof(float)) == 0;
    CHECK(all_ranks(same));
  }
}

TEST_CASE("transport: auto measures how to write the slots, TOROID_SLOT_STORES fixes it",
          "[transport]") {
  {
    Communicator measured(MPI_COMM_WORLD, over(Transport::shm));
    const SlotStores s = measured.slot_stores();
    if (measured.uses_shared_memory())
      CHECK((s == SlotStores::cached || s == SlotStores::streaming));
    else
      CHECK(s == SlotStores::automatic);
    // One choice per node: every rank of it took the node's first rank's answer.
    int mine = static_cast<int>(s), low = 0, high = 0;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, node);
    MPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, node);
    MPI_Comm_free(&node);
    CHECK(all_ranks(low == high));
    // Whichever it chose, the sums are the MPI transport's.
    Communicator by_mpi(MPI_COMM_WORLD, over(Transport::mpi));
    std::vector<float> in(200'003), x(in.size()), y(in.size());
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = 1.0f / static_cast<float>(i % 613 + 1 + world_rank());
    allreduce(std::span<const float>(in), std::span<float>(x), ReduceOp::sum, measured,
              Algorithm::ring);
    allreduce(std::span<const float>(in), std::span<float>(y), ReduceOp::sum, by_mpi,
              Algorithm::ring);
    CHECK(all_ranks(x == y));
  }
  setenv("TOROID_SLOT_STORES", "streaming", 1);
  {
    Communicator c(MPI_COMM_WORLD, over(Transport::shm, SlotStores::cached));
    CHECK(c.slot_stores() == (c.uses_shared_memory() ? SlotStores::cached  // the option wins
                                                     : SlotStores::automatic));
    Options o;
    o.transport = Transport::shm;
    Communicator d(MPI_COMM_WORLD, o);
    CHECK(d.slot_stores() ==
          (d.uses_shared_memory() ? SlotStores::streaming : SlotStores::automatic));
  }
  setenv("TOROID_SLOT_STORES", "fast", 1);
  CHECK_THROWS_WITH(
      Communicator(MPI_COMM_WORLD),
      "TOROID_SLOT_STORES: unknown slot stores 'fast' (expected auto, cached or streaming)");
  unsetenv("TOROID_SLOT_STORES");
  CHECK_THROWS_WITH(parse_slot_stores("Cached"),
                    "unknown slot stores 'Cached' (expected auto, cached or streaming)");
}

TEST_CASE("transport: TOROID_TRANSPORT names a transport or is an error on every rank",
          "[transport]") {
  setenv("TOROID_TRANSPORT", "carrier-pigeon", 1);
  CHECK_THROWS_WITH(
      Communicator(MPI_COMM_WORLD),
      "TOROID_TRANSPORT: unknown transport 'carrier-pigeon' (expected auto, mpi or shm)");
  setenv("TOROID_TRANSPORT", "mpi", 1);
  {
    Communicator c(MPI_COMM_WORLD);
    CHECK_FALSE(c.uses_shared_memory());
  }
  unsetenv("TOROID_TRANSPORT");
  CHECK_THROWS_WITH(parse_transport("SHM"), "unknown transport 'SHM' (expected auto, mpi or shm)");
}

// Run only by tests/mpi/shm_room_test.sh, which starts the job with a /dev/shm too small for the
// channels (a private mount namespace with a few MiB of tmpfs there): `shm` is refused on every
// rank naming the node's room, `auto` runs that node over MPI with the same sums.
TEST_CASE("no shm room: a node without /dev/shm room refuses shm and runs auto over MPI",
          "[.shm_room]") {
  REQUIRE(testing::ranks_on_my_node() > 1);
  CHECK_THROWS_WITH(Communicator(MPI_COMM_WORLD, over(Transport::shm)),
                    Catch::Contains("has no room in /dev/shm for the shared-memory links of its") &&
                        Catch::Contains("use transport auto"));
  Communicator on_auto(MPI_COMM_WORLD, over(Transport::automatic));
  CHECK_FALSE(on_auto.uses_shared_memory());
  const std::size_t n = 100'003;
  std::vector<float> x(n, static_cast<float>(world_rank() + 1));
  allreduce(std::span<float>(x), ReduceOp::sum, on_auto, Algorithm::ring);
  const float expect = static_cast<float>(world_size() * (world_size() + 1) / 2);
  CHECK(all_ranks(std::all_of(x.begin(), x.end(), [&](float v) { return v == expect; })));
}
