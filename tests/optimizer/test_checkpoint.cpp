// Checkpoints under mpirun: a run continues bit-identically from one; files move between rank
// counts, sharded and replicated; a damaged section is refused by name on every rank before
// anything is loaded; version-1 files still load; a save is all or nothing (a stale temporary
// does not stop it, a failed one leaves the previous file). The crash and full-disk cases run
// in checkpoint_crash_test.py.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../mpi/mpi_test.hpp"
#include "model.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using Catch::Contains;
using testing::all_ranks;
using testing::max_relative;
using testing::Model;
using testing::shared_path;
using testing::world_rank;
using testing::world_size;

namespace {

// As the optimizer tests: not divisible by 2, 3 or 4, spread over several 256-element buckets.
const std::vector<std::size_t> kCheckpointSizes = {37, 1, 250, 1001, 5};

OptimizerConfig adamw() {
  OptimizerConfig c;
  c.kind = OptimizerKind::adamw, c.learning_rate = 0.01, c.weight_decay = 0.01,
  c.bucket_bytes = 1024;
  return c;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Rank 0 writes, every rank returns once it is there.
void write_file(const std::string& path, const std::vector<char>& bytes) {
  if (world_rank() == 0) std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

TEST_CASE("checkpoints restore exactly and move between rank counts", "[optimizer]") {
  const int p = world_size(), r = world_rank();
  OptimizerConfig c = adamw();

  SECTION("same communicator: the continued run is bit-identical, replicated and sharded") {
    Communicator comm(MPI_COMM_WORLD);
    const std::string path = shared_path("exact");
    for (bool shard : {true, false}) {
      CAPTURE(shard);
      c.shard = shard;
      Model first(kCheckpointSizes), second(kCheckpointSizes);
      ShardedOptimizer a(comm, first.parameters(), c);
      for (int step = 1; step <= 4; ++step) first.set_gradients(step, r, p), a.step();
      a.save(path);
      ShardedOptimizer b(comm, second.parameters(), c);
      b.load(path);
      CHECK(b.steps_taken() == 4);
      CHECK(all_ranks(second.weights == first.weights));
      for (int step = 5; step <= 7; ++step) {
        first.set_gradients(step, r, p), second.set_gradients(step, r, p);
        a.step(), b.step();
      }
      CHECK(all_ranks(second.weights == first.weights));
    }
    if (r == 0) std::remove(path.c_str());
  }

  SECTION("saved at about half the ranks, loaded at all of them, replicated and sharded") {
    const std::string path = shared_path("moved");
    const int half = std::max(1, p / 2);
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, r < half ? 0 : MPI_UNDEFINED, r, &sub);
    if (sub != MPI_COMM_NULL) {
      Communicator small(sub);
      Model model(kCheckpointSizes);
      ShardedOptimizer a(small, model.parameters(), c);
      for (int step = 1; step <= 5; ++step) model.set_gradients(step, r, half), a.step();
      a.save(path);
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    Communicator comm(MPI_COMM_WORLD);
    for (bool shard : {true, false}) {
      OptimizerConfig lc = c;
      lc.shard = shard;
      Model resumed(kCheckpointSizes), straight(kCheckpointSizes);
      for (auto& t : resumed.weights) std::fill(t.begin(), t.end(), 0.0f);  // load must set them
      ShardedOptimizer b(comm, resumed.parameters(), lc);
      b.load(path);
      ShardedOptimizer ref(comm, straight.parameters(), c);
      for (int step = 1; step <= 5; ++step) straight.set_gradients(step, r, p), ref.step();
      for (int step = 6; step <= 10; ++step) {
        resumed.set_gradients(step, r, p), straight.set_gradients(step, r, p);
        b.step(), ref.step();
      }
      const double err = max_relative(resumed.weights, straight.weights);
      CAPTURE(shard, err);
      CHECK(all_ranks(err <= 1e-5));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) std::remove(path.c_str());
  }
}

TEST_CASE("a damaged checkpoint is refused, naming the section, before anything is loaded",
          "[optimizer]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  const OptimizerConfig c = adamw();
  const std::string path = shared_path("flip");
  Model model(kCheckpointSizes);
  ShardedOptimizer a(comm, model.parameters(), c);
  for (int step = 1; step <= 3; ++step) model.set_gradients(step, r, p), a.step();
  a.save(path);
  const std::vector<char> good = read_file(path);

  // The layout, pinned: header (magic, version, kind, steps, arrays, tensors; per tensor its
  // name; one CRC per section and the header's own), then weights, m and v of every tensor.
  std::size_t header = 8 + 4 + 4 + 8 + 8 + 8, total = 0;
  std::vector<std::size_t> starts;
  for (std::size_t t = 0; t < kCheckpointSizes.size(); ++t)
    header += 4 + Model::name_of(t).size() + 8, starts.push_back(total),
        total += kCheckpointSizes[t];
  header += 4 * (3 * kCheckpointSizes.size() + 1);
  REQUIRE(good.size() == header + 3 * total * sizeof(float));

  std::vector<std::pair<std::size_t, std::string>> flips = {
      {20, "the checksum of its header does not match"},           // a byte of the step count
      {header - 2, "the checksum of its header does not match"}};  // the header's own CRC
  const char* arrays[] = {"weights", "first moment", "second moment"};
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t t = 0; t < kCheckpointSizes.size(); ++t)
      flips.emplace_back(
          header + (a * total + starts[t] + kCheckpointSizes[t] / 2) * sizeof(float) + 1,
          std::string("the checksum of the ") + arrays[a] + " of '" + Model::name_of(t) +
              "' does not match");

  Model other(kCheckpointSizes);
  ShardedOptimizer b(comm, other.parameters(), c);
  const auto before = other.weights;
  for (const auto& [at, what] : flips) {
    CAPTURE(at, what);
    std::vector<char> bad = good;
    bad[at] ^= 0x10;
    write_file(path, bad);
    CHECK_THROWS_WITH(b.load(path), Contains(path) && Contains(what));
    CHECK(all_ranks(other.weights == before && b.steps_taken() == 0));
  }
  write_file(path, good);
  b.load(path);
  CHECK(all_ranks(other.weights == model.weights && b.steps_taken() == 3));
  if (r == 0) std::remove(path.c_str());
}

TEST_CASE("a version-1 checkpoint still loads, on the same trajectory", "[optimizer]") {
  // tests/optimizer/data/adamw_v1.ckpt: this model after 4 adamw steps at 1 rank, written by
  // the format-1 code (the last build before checksums).
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  const OptimizerConfig c = adamw();
  Model resumed(kCheckpointSizes), straight(kCheckpointSizes);
  for (auto& t : resumed.weights) std::fill(t.begin(), t.end(), 0.0f);
  ShardedOptimizer b(comm, resumed.parameters(), c);
  b.load(TOROID_TEST_DATA "/adamw_v1.ckpt");
  CHECK(b.steps_taken() == 4);
  ShardedOptimizer ref(comm, straight.parameters(), c);
  for (int step = 1; step <= 4; ++step) straight.set_gradients(step, r, p), ref.step();
  CHECK(all_ranks(max_relative(resumed.weights, straight.weights) <= 1e-5));
  for (int step = 5; step <= 7; ++step) {
    resumed.set_gradients(step, r, p), straight.set_gradients(step, r, p);
    b.step(), ref.step();
  }
  const double err = max_relative(resumed.weights, straight.weights);
  CAPTURE(err);
  CHECK(all_ranks(err <= 1e-5));
}

TEST_CASE("a save is all or nothing", "[optimizer]") {
  const int r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  const OptimizerConfig c = adamw();
  const std::string path = shared_path("atomic"), temporary = path + ".saving";
  Model model(kCheckpointSizes);
  ShardedOptimizer a(comm, model.parameters(), c);

  SECTION("a stale temporary from a killed save does not stop the next") {
    write_file(temporary, std::vector<char>(100000, 'x'));
    a.save(path);
    CHECK(all_ranks(!exists(temporary)));
    Model other(kCheckpointSizes);
    ShardedOptimizer b(comm, other.parameters(), c);
    b.load(path);
    CHECK(all_ranks(other.weights == model.weights));
  }
  SECTION("a save that cannot start leaves the previous file and no temporary") {
    a.save(path);
    const std::vector<char> good = read_file(path);
    // A directory where the temporary should go: rank 0 cannot create it.
    if (r == 0) ::mkdir(temporary.c_str(), 0700);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_THROWS_WITH(a.save(path), Contains("cannot open '" + path + "' for writing") &&
                                        Contains("on rank 0") && Contains("Is a directory"));
    CHECK(all_ranks(read_file(path) == good));
    if (r == 0) ::rmdir(temporary.c_str());
  }
  SECTION("a path that is empty, or not the same on every rank") {
    CHECK_THROWS_WITH(a.save(""), Contains("ShardedOptimizer::save: the path is empty on rank"));
    if (world_size() > 1) {
      const std::string mine = r == 1 ? path + ".1" : path;
      CHECK_THROWS_WITH(a.save(mine), Contains("rank 1 names '" + path + ".1' and rank 0 '" + path +
                                               "': every rank must pass the same path"));
      CHECK_THROWS_WITH(a.load(mine), Contains("ShardedOptimizer::load: rank 1 names"));
      CHECK(all_ranks(!exists(path) && !exists(path + ".1") && !exists(temporary)));
    }
  }
  SECTION("checkpoints that do not fit") {
    Model model5(kCheckpointSizes);
    ShardedOptimizer opt(comm, model5.parameters(), c);
    CHECK_THROWS_WITH(opt.load("/nonexistent/toroid.ckpt"),
                      Contains("cannot open '/nonexistent/toroid.ckpt' for reading"));
    CHECK_THROWS_WITH(opt.save("/nonexistent/toroid.ckpt"),
                      Contains("cannot open '/nonexistent/toroid.ckpt' for writing"));
    const std::string path = shared_path("misfit");
    Model other({37, 2});
    OptimizerConfig sgd = c;
    sgd.kind = OptimizerKind::sgd;
    ShardedOptimizer small(comm, other.parameters(), c);
    small.save(path);
    CHECK_THROWS_WITH(opt.load(path), Contains("has 2 parameters, this optimizer has 5"));
    ShardedOptimizer momentum(comm, other.parameters(), sgd);
    CHECK_THROWS_WITH(momentum.load(path), Contains("holds adamw state, this optimizer is sgd"));
    if (world_rank() == 0) std::remove(path.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) std::remove(path.c_str());
}

// Run by checkpoint_crash_test.py in a private mount namespace with a small tmpfs on
// TOROID_TEST_FULL_DIR: a save that runs out of room is an error on every rank, naming the
// cause, and leaves the previous checkpoint loadable and no temporary.
TEST_CASE("a save onto a full file system", "[.checkpoint_full]") {
  const char* dir = std::getenv("TOROID_TEST_FULL_DIR");
  REQUIRE(dir != nullptr);
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  const OptimizerConfig c = adamw();
  const std::string path = std::string(dir) + "/full.ckpt";
  Model small(kCheckpointSizes), big({300000, 100000});
  ShardedOptimizer a(comm, small.parameters(), c), b(comm, big.parameters(), c);
  small.set_gradients(1, r, p), a.step();
  a.save(path);
  const std::vector<char> good = read_file(path);
  CHECK_THROWS_WITH(b.save(path), Contains("saving '" + path + "' failed") &&
                                      Contains("the previous file is untouched") &&
                                      Contains("No space left on device") && Contains("rank"));
  CHECK(all_ranks(read_file(path) == good && !exists(path + ".saving")));
  Model back(kCheckpointSizes);
  ShardedOptimizer d(comm, back.parameters(), c);
  d.load(path);
  CHECK(all_ranks(back.weights == small.weights && d.steps_taken() == 1));
}

TEST_CASE("the whole state in memory: the same at any layout, set into another", "[optimizer]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::sgd}) {
    CAPTURE(to_string(kind));
    OptimizerConfig c = adamw();
    c.kind = kind;
    Model first(kCheckpointSizes), second(kCheckpointSizes);
    ShardedOptimizer a(comm, first.parameters(), c);
    for (int step = 1; step <= 4; ++step) first.set_gradients(step, r, p), a.step();
    const OptimizerState whole = a.state();
    std::size_t total = 0;
    for (std::size_t n : kCheckpointSizes) total += n;
    CHECK(whole.steps == 4);
    CHECK(whole.names == state_names(kind));
    REQUIRE(whole.arrays.size() == whole.names.size());
    CHECK(whole.arrays[0].size() == total);
    // The same on every rank, and not all zero (every shard took part).
    std::vector<float> root = whole.arrays[0];
    MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    CHECK(all_ranks(root == whole.arrays[0]));
    CHECK(std::count(root.begin(), root.end(), 0.0f) == 0);
    // Into a replicated optimizer with other buckets: the same state back, the same steps on.
    OptimizerConfig other = c;
    other.shard = false, other.bucket_bytes = 4096, other.first_bucket_bytes = 4096;
    second.weights = first.weights;
    ShardedOptimizer b(comm, second.parameters(), other);
    b.set_state(whole);
    CHECK(b.steps_taken() == 4);
    CHECK(all_ranks(b.state().arrays == whole.arrays));
    for (int step = 5; step <= 7; ++step) {
      first.set_gradients(step, r, p), second.set_gradients(step, r, p);
      a.step(), b.step();
    }
    CHECK(all_ranks(max_relative(second.weights, first.weights) <= 1e-5));
    // Another kind's or size's state: an error on every rank, naming it.
    OptimizerState wrong = whole;
    wrong.arrays[0].pop_back();
    CHECK_THROWS_WITH(b.set_state(wrong),
                      Contains("has " + std::to_string(total - 1) + " elements"));
    wrong = whole;
    wrong.arrays.emplace_back(total);
    wrong.names.clear();
    CHECK_THROWS_WITH(b.set_state(wrong), Contains("state arrays"));
  }
}
