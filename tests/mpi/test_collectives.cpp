// Every collective x type x op x count x in-place/out-of-place, for each algorithm, against the
// stock MPI result (MPI_Allreduce over the same inputs as doubles; small integers make every
// type exact). Every type and op up to TOROID_TEST_EVERY_TYPE_UP_TO ranks (4 in the Release tree),
// a few of them beyond (sweep_types).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "catch_extras.hpp"
#include "collective_case.hpp"
#include "core/element.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using namespace toroid::testing;

namespace {

void sweep(Collective coll, const char* name,
           std::initializer_list<Algorithm> algorithms = {Algorithm::ring, Algorithm::mpi}) {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  const bool has_op = coll == Collective::allreduce || coll == Collective::reduce_scatter;
  const std::span<const ReduceOp> ops = sweep_ops(p);
  for (std::uint64_t n : counts(p)) {
    std::vector<std::vector<double>> refs;  // by op, as ops lists them
    for (ReduceOp op : ops)
      refs.push_back(has_op || op == ReduceOp::sum ? reference(op, n, comm.rank(), p)
                                                   : std::vector<double>{});
    for (DataType t : sweep_types(p)) {
      CaseBuffers bufs;  // one pair for every case of this count and type
      for (std::size_t o = 0; o < ops.size(); ++o) {
        const ReduceOp op = ops[o];
        if (!has_op && op != ReduceOp::sum) continue;  // no op
        if (op == ReduceOp::avg && !is_floating(t)) continue;
        for (Algorithm a : algorithms)
          for (bool ip : {false, true}) {
            if (ip && coll == Collective::alltoall) continue;  // never in place
            const Case c{a, t, op, n, ip};
            const std::uint64_t wrong = run_case(coll, c, comm, refs[o], bufs);
            REQUIRE_SAYING(all_ranks(wrong == 0), c.describe(name)
                                                      << ": " << wrong << " wrong elements on rank "
                                                      << comm.rank() << " (p=" << p << ")");
          }
      }
    }
  }
}

}  // namespace

TEST_CASE("allreduce matches stock MPI for every type, op, count and placement",
          "[collectives][mpich]") {
  sweep(Collective::allreduce, "allreduce");
}
TEST_CASE("reduce_scatter matches stock MPI for every type, op, count and placement",
          "[collectives][mpich]") {
  sweep(Collective::reduce_scatter, "reduce_scatter");
}
TEST_CASE("allgather matches stock MPI for every type, count and placement",
          "[collectives][mpich]") {
  sweep(Collective::allgather, "allgather");
}
TEST_CASE("broadcast delivers the root's bits for every type and count", "[collectives][mpich]") {
  sweep(Collective::broadcast, "broadcast");
}
TEST_CASE("alltoall delivers every rank's blocks for every type and count, as MPI_Alltoall",
          "[collectives][mpich][alltoall]") {
  sweep(Collective::alltoall, "alltoall",
        {Algorithm::direct, Algorithm::bruck, Algorithm::ring, Algorithm::torus2d,
         Algorithm::torus2d_both, Algorithm::hierarchical, Algorithm::automatic, Algorithm::mpi});
}

namespace {

// Inputs whose rounding depends on the order of reduction.
std::vector<float> awkward_floats(int rank, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = 1.0f / static_cast<float>(3 + (i * 7 + rank * 13) % 101) + 1e4f * (i % 3 == 0);
  return v;
}

}  // namespace

TEST_CASE("every algorithm on every shape that fits matches stock MPI", "[collectives]") {
  const int p = testing::world_size();
  for (const std::string& shape : shapes(p)) {
    Options o;
    o.topology = shape;
    Communicator comm(MPI_COMM_WORLD, o);
    for (Algorithm a : all_algorithms) {
      if (a == Algorithm::mpi) continue;
      for (Collective coll : {Collective::allreduce, Collective::reduce_scatter,
                              Collective::allgather, Collective::broadcast, Collective::alltoall}) {
        if (!implements(a, coll)) continue;
        for (ReduceOp op : sweep_ops(p)) {
          if ((coll == Collective::allgather || coll == Collective::broadcast ||
               coll == Collective::alltoall) &&
              op != ReduceOp::sum)
            continue;
          for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t(p + 1), std::uint64_t{1001}}) {
            const std::vector<double> ref = reference(op, n, comm.rank(), p);
            for (DataType t : sweep_types(p)) {
              if (op == ReduceOp::avg && !is_floating(t)) continue;
              for (bool ip : {false, true}) {
                if (ip && coll == Collective::alltoall) continue;  // never in place
                const Case c{a, t, op, n, ip};
                const std::uint64_t wrong = run_case(coll, c, comm, ref);
                REQUIRE_SAYING(all_ranks(wrong == 0),
                               c.describe(std::string(toroid::to_string(coll)))
                                   << " on " << shape << ": " << wrong << " wrong on rank "
                                   << comm.rank());
              }
            }
          }
        }
      }
    }
    // One larger vector per algorithm, so pipelining over many segments runs on every shape.
    for (Algorithm a : all_algorithms) {
      if (!implements(a, Collective::allreduce)) continue;
      const Case c{a, DataType::f32, ReduceOp::sum, 300007, false};
      const std::vector<double> ref = reference(ReduceOp::sum, c.n, comm.rank(), p);
      const std::uint64_t wrong = run_case(Collective::allreduce, c, comm, ref);
      REQUIRE_SAYING(all_ranks(wrong == 0), c.describe("allreduce") << " on " << shape);
    }
  }
}

// torus2d_both's reduce-scatter and all-gather read a torus's columns as gathered chunks:
// runs of the vector that MPI sends as a derived type segment by segment and shared memory
// copies run by run. Segments smaller than a run and larger than several, both transports.
TEST_CASE("torus2d_both reduce-scatter and all-gather across segments and transports",
          "[collectives]") {
  const int p = testing::world_size();
  int shapes_run = 0;
  for (const std::string& shape : shapes(p)) {
    const int x = std::stoi(shape);
    if (x == 1 || x == p) continue;  // 2D shapes only: one dimension has nothing to split
    ++shapes_run;
    for (Transport tr : {Transport::mpi, Transport::shm})
      for (std::size_t seg : {std::size_t{64}, std::size_t{4096}, std::size_t{256 * 1024}}) {
        if (tr == Transport::shm && seg != 256 * 1024) continue;  // shm cuts at its slots
        Options o;
        o.topology = shape;
        o.transport = tr;
        o.segment_bytes = seg;
        Communicator comm(MPI_COMM_WORLD, o);
        // 64 B segments cut 4099 elements into many; the large vector runs at the others.
        for (std::uint64_t n : {std::uint64_t{4099}, std::uint64_t{300007}}) {
          if (seg == 64 && n > 4099) continue;
          for (Collective coll : {Collective::reduce_scatter, Collective::allgather})
            for (bool ip : {false, true}) {
              const Case c{Algorithm::torus2d_both, DataType::f32, ReduceOp::sum, n, ip};
              const std::uint64_t wrong =
                  run_case(coll, c, comm, reference(ReduceOp::sum, n, comm.rank(), p));
              REQUIRE_SAYING(all_ranks(wrong == 0), c.describe(std::string(toroid::to_string(coll)))
                                                        << " on " << shape << " segment " << seg
                                                        << ": " << wrong << " wrong");
            }
        }
      }
  }
  if (shapes_run == 0) SKIP_CASE("no 2D shape at " + std::to_string(p) + " ranks");
}

TEST_CASE("hierarchical all-reduce on emulated unequal nodes", "[collectives]") {
  const int p = testing::world_size();
  // Node layouts that add up to p: one rank alone, then the rest together; and alternating sizes.
  std::vector<std::string> layouts{std::to_string(p)};
  if (p > 1) layouts.push_back("1," + std::to_string(p - 1));
  if (p > 2) layouts.push_back(std::to_string(p - 2) + ",2");
  for (const std::string& nodes : layouts) {
    Options o;
    o.nodes = nodes;
    Communicator comm(MPI_COMM_WORLD, o);
    for (std::uint64_t n : {std::uint64_t{3}, std::uint64_t{1000}, std::uint64_t{65537}})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::avg})
        for (bool ip : {false, true}) {
          const Case c{Algorithm::hierarchical, DataType::f32, op, n, ip};
          const std::uint64_t wrong =
              run_case(Collective::allreduce, c, comm, reference(op, n, comm.rank(), p));
          REQUIRE_SAYING(all_ranks(wrong == 0), c.describe("allreduce") << " on nodes " << nodes);
        }
    CHECK(comm.nodes() == static_cast<int>(std::count(nodes.begin(), nodes.end(), ',') + 1));
  }
}

TEST_CASE("results are bitwise identical across repeated runs and segment sizes", "[collectives]") {
  const int p = testing::world_size();
  const std::size_t n = 50021;
  const std::vector<float> in = awkward_floats(testing::world_rank(), n);
  for (const std::string& shape : shapes(p)) {
    for (Algorithm a : all_algorithms) {
      if (a == Algorithm::mpi || a == Algorithm::automatic || !implements(a, Collective::allreduce))
        continue;
      std::vector<std::vector<float>> results;
      // 1000 B: a segment that divides no block (250 floats); 64 B segments cost 3000 messages
      // a step here and showed nothing 1000 B does not.
      for (std::size_t seg : {std::size_t{256 * 1024}, std::size_t{1000}, std::size_t{4096},
                              std::size_t{256 * 1024}}) {
        Options o;
        o.topology = shape;
        o.segment_bytes = seg;
        o.transport =
            Transport::mpi;  // the segment pipelines MPI transfers (shared memory has its slots)
        Communicator comm(MPI_COMM_WORLD, o);
        std::vector<float> out(n);
        allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, comm, a);
        results.push_back(std::move(out));
      }
      bool same = true;
      for (const auto& r : results)
        same = same && std::memcmp(r.data(), results[0].data(), n * 4) == 0;
      // Every rank must also hold the same bits as every other rank.
      std::vector<float> root = results[0];
      MPI_Bcast(root.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
      same = same && std::memcmp(root.data(), results[0].data(), n * 4) == 0;
      REQUIRE_SAYING(all_ranks(same), to_string(a) << " on " << shape << " is not deterministic");
    }
  }
}

TEST_CASE("axis collectives match stock MPI on each row and column", "[collectives]") {
  const int p = testing::world_size();
  for (const std::string& shape : shapes(p)) {
    Options o;
    o.topology = shape;
    Communicator comm(MPI_COMM_WORLD, o);
    const Coord at = comm.topology().coord_of(comm.rank());
    for (Axis axis : {Axis::x, Axis::y}) {
      const int len = comm.topology().dim(axis), pos = axis == Axis::x ? at.x : at.y;
      for (Algorithm a :
           {Algorithm::automatic, Algorithm::ring, Algorithm::bidir_ring, Algorithm::mpi})
        for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1003}}) {
          std::vector<std::int64_t> in(n), out(n), ref(n);
          for (std::uint64_t i = 0; i < n; ++i)
            in[i] = comm.rank() * 1000 + static_cast<std::int64_t>(i);
          // Reference: the stock reduction over the row (column) communicator.
          MPI_Comm line;
          MPI_Comm_split(MPI_COMM_WORLD, axis == Axis::x ? at.y : at.x, pos, &line);
          MPI_Allreduce(in.data(), ref.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, line);
          allreduce_axis(in.data(), n, out.data(), n, DataType::i64, ReduceOp::sum, axis, comm, a);
          bool ok = out == ref;
          const Block own = block_of(n, len, pos);
          std::vector<std::int64_t> piece(own.count);
          reduce_scatter_axis(in.data(), n, piece.data(), own.count, DataType::i64, ReduceOp::sum,
                              axis, comm, a);
          ok = ok && std::equal(piece.begin(), piece.end(),
                                ref.begin() + static_cast<std::ptrdiff_t>(own.offset));
          std::vector<std::int64_t> gathered(n);
          allgather_axis(ref.data() + own.offset, own.count, gathered.data(), n, DataType::i64,
                         axis, comm, a);
          ok = ok && gathered == ref;
          MPI_Comm_free(&line);
          REQUIRE_SAYING(all_ranks(ok),
                         "axis collectives with " << to_string(a) << " on " << shape << " n=" << n);
        }
    }
  }
}

TEST_CASE("tori of three dimensions and more: every algorithm that runs on them matches stock MPI",
          "[collectives][3d]") {
  // Shapes of this rank count with three dimensions or more (8 ranks: 2x2x2 as a torus, a mesh and
  // mixed, 2x2x2x1; 6 ranks: 1x2x3, whose ring of 2 cuts its blocks relative to the ring of 3 in
  // two runs, so its reductions land in gathered runs; 4 ranks: 2x1x2; 3 ranks: 1x1x3, whose
  // ring of 3 swing_latency combs: a second peer's vector lands beside the first and is added
  // by a local reduce), and a 1D shape. What is 2D only (swing_latency's reduce-scatter and
  // all-gather) refuses them on every rank with the reason; the rest (Swing's bandwidth form
  // included) must match stock.
  const int p = testing::world_size();
  std::vector<std::string> shapes{std::to_string(p)};
  if (p == 8)
    for (const char* s : {"2x2x2", "2x2x2:wrap=xz", "2x2x2:wrap=none", "2x2x2x1:wrap=y"})
      shapes.emplace_back(s);
  if (p == 6) shapes.emplace_back("1x2x3");
  if (p == 4) shapes.emplace_back("2x1x2");
  if (p == 3) shapes.emplace_back("1x1x3");
  for (const std::string& shape : shapes) {
    Options o;
    o.topology = shape;
    Communicator comm(MPI_COMM_WORLD, o);
    CHECK(comm.shape().to_string() == Torus::parse(shape).to_string());
    if (comm.shape().dimensions() > 2)
      CHECK_THROWS_WITH(comm.topology(), Catch::Contains("Communicator::shape() describes it"));
    for (Algorithm a : all_algorithms) {
      if (a == Algorithm::mpi) continue;
      for (Collective coll : {Collective::allreduce, Collective::reduce_scatter,
                              Collective::allgather, Collective::broadcast}) {
        if (!implements(a, coll)) continue;
        const bool two_d_only = a == Algorithm::swing_latency && coll != Collective::allreduce;
        for (std::uint64_t n : {std::uint64_t(p + 1), std::uint64_t{100003}}) {
          const ReduceOp op = coll == Collective::allreduce ? ReduceOp::max : ReduceOp::sum;
          const std::vector<double> ref = reference(op, n, comm.rank(), p);
          for (bool ip : {false, true}) {
            const Case c{a, DataType::i32, op, n, ip};
            if (two_d_only && comm.shape().dimensions() > 2) {
              std::string message;
              try {
                run_case(coll, c, comm, ref);
              } catch (const InvalidArgument& e) {
                message = e.what();
              }
              REQUIRE_SAYING(all_ranks(message.find("2D shapes") != std::string::npos),
                             c.describe(std::string(toroid::to_string(coll)))
                                 << " on " << shape << " did not refuse the shape: '" << message
                                 << "'");
              continue;
            }
            const std::uint64_t wrong = run_case(coll, c, comm, ref);
            REQUIRE_SAYING(all_ranks(wrong == 0), c.describe(std::string(toroid::to_string(coll)))
                                                      << " on " << shape << ": " << wrong
                                                      << " wrong on rank " << comm.rank());
          }
        }
      }
    }
    // Along every set of the shape's dimensions (rows, columns, planes, the whole): each
    // sub-torus on its own, against stock on a communicator of the same group.
    const Torus& t = comm.shape();
    for (unsigned bits = 1; bits < (1u << t.dimensions()); ++bits) {
      std::string letters;
      for (int d = 0; d < t.dimensions(); ++d)
        if ((bits >> d) & 1u) letters += "xyzwvu"[d];
      const Axes axes = Axes::parse(letters);
      const std::vector<int> group = t.group_along(comm.rank(), axes);
      const int k = static_cast<int>(group.size()), at = t.position_along(comm.rank(), axes);
      MPI_Comm line;
      MPI_Comm_split(MPI_COMM_WORLD, group.front(), at, &line);
      const std::uint64_t n = 1003;
      const Block own = block_of(n, k, at);
      std::vector<std::int64_t> in(n), mine(n, 0), sum(n), gathered(n);
      for (std::uint64_t i = 0; i < n; ++i)
        in[i] = comm.rank() * 1000 + static_cast<std::int64_t>(i);
      std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(own.offset), own.count,
                  mine.begin() + static_cast<std::ptrdiff_t>(own.offset));
      MPI_Allreduce(in.data(), sum.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, line);
      MPI_Allreduce(mine.data(), gathered.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, line);
      const std::uint64_t b = 5;  // all-to-all: 5 elements a member
      std::vector<std::int64_t> exchanged(b * static_cast<std::uint64_t>(k));
      MPI_Alltoall(in.data(), static_cast<int>(b), MPI_INT64_T, exchanged.data(),
                   static_cast<int>(b), MPI_INT64_T, line);
      MPI_Comm_free(&line);
      for (Algorithm a : {Algorithm::automatic, Algorithm::bidir_ring, Algorithm::ring,
                          Algorithm::torus2d, Algorithm::torus2d_both, Algorithm::mpi}) {
        const std::string what = "along " + letters + " with " + std::string(to_string(a)) +
                                 " on " + shape + ", rank " + std::to_string(comm.rank());
        std::vector<std::int64_t> out(n, -1);
        allreduce_axis(in.data(), n, out.data(), n, DataType::i64, ReduceOp::sum, axes, comm, a);
        REQUIRE_SAYING(all_ranks(out == sum), "allreduce " << what);
        std::vector<std::int64_t> block(own.count, -1);
        reduce_scatter_axis(in.data(), n, block.data(), own.count, DataType::i64, ReduceOp::sum,
                            axes, comm, a);
        REQUIRE_SAYING(all_ranks(std::equal(block.begin(), block.end(),
                                            sum.begin() + static_cast<std::ptrdiff_t>(own.offset))),
                       "reduce_scatter " << what);
        std::fill(out.begin(), out.end(), -1);
        allgather_axis(in.data() + own.offset, own.count, out.data(), n, DataType::i64, axes, comm,
                       a);
        REQUIRE_SAYING(all_ranks(out == gathered), "allgather " << what);
        // The typed in-place form finds this rank's block by its place in the group.
        std::vector<std::int64_t> in_place = mine;
        allgather_axis(std::span<std::int64_t>(in_place), axes, comm, a);
        REQUIRE_SAYING(all_ranks(in_place == gathered), "in-place allgather " << what);
        if (a == Algorithm::ring || a == Algorithm::bidir_ring) continue;  // no all-to-all
        std::vector<std::int64_t> to_all(exchanged.size(), -1);
        ialltoall_axis(std::span<const std::int64_t>(in).first(exchanged.size()),
                       std::span<std::int64_t>(to_all), axes, comm, a)
            .wait();
        REQUIRE_SAYING(all_ranks(to_all == exchanged), "alltoall " << what);
      }
      std::vector<std::int64_t> direct(exchanged.size(), -1);
      alltoall_axis(in.data(), exchanged.size(), direct.data(), direct.size(), DataType::i64, axes,
                    comm, Algorithm::direct);
      REQUIRE_SAYING(all_ranks(direct == exchanged),
                     "alltoall along " << letters << " with direct");
    }
  }
}

TEST_CASE("typed span API, segment sizes and the TOROID_* defaults agree with each other",
          "[collectives]") {
  Options o;
  o.segment_bytes = 64;          // many tiny segments: exercises the pipelining bookkeeping
  o.transport = Transport::mpi;  // where the segment applies
  Communicator small(MPI_COMM_WORLD, o);
  Communicator dflt(MPI_COMM_WORLD);
  std::vector<float> a(10007), b(10007), c(10007);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 13 + small.rank()) % 7);
  allreduce(std::span<const float>(a), std::span<float>(b), ReduceOp::sum, small);
  allreduce(std::span<const float>(a), std::span<float>(c), ReduceOp::sum, dflt, Algorithm::mpi);
  CHECK(all_ranks(b == c));
  CHECK(small.segment_bytes() == 64);
  CHECK(dflt.segment_bytes() == default_segment_bytes);
}

TEST_CASE("every typed form gives what its type-erased call gives", "[collectives]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const std::size_t n = 37 * static_cast<std::size_t>(p) + 3;
  std::vector<int> in(n);
  for (std::size_t i = 0; i < n; ++i)
    in[i] = static_cast<int>(i * 7 + static_cast<std::size_t>(me) * 3);
  const Block own = block_of(n, p, me);
  const std::span<const int> cin(in);
  // The reference: the type-erased calls.
  std::vector<int> rs_ref(own.count), ag_ref(n), bc_ref(in);
  reduce_scatter(in.data(), n, rs_ref.data(), own.count, DataType::i32, ReduceOp::sum, comm);
  allgather(in.data() + own.offset, own.count, ag_ref.data(), n, DataType::i32, comm);
  broadcast(bc_ref.data(), n, DataType::i32, p - 1, comm);

  std::vector<int> rs(own.count), ag(n), bc(in);
  Request r = reduce_scatter_init(cin, std::span<int>(rs), ReduceOp::sum, comm);
  r.start();
  r.wait();
  CHECK(all_ranks(rs == rs_ref));
  Request g = allgather_init(std::span<const int>(in).subspan(own.offset, own.count),
                             std::span<int>(ag), comm);
  g.start();
  g.wait();
  CHECK(all_ranks(ag == ag_ref));
  Request b = broadcast_init(std::span<int>(bc), p - 1, comm);
  b.start();
  b.wait();
  CHECK(all_ranks(bc == bc_ref));
  std::vector<int> whole(in);  // in place: the own block at its offset
  allgather(std::span<int>(whole), comm);
  std::vector<int> ag_in_place(n);
  allgather(in.data() + own.offset, own.count, ag_in_place.data(), n, DataType::i32, comm);
  CHECK(all_ranks(whole == ag_in_place));

  // Along each axis: (in, out), in place and non-blocking against the type-erased call.
  for (const Axis axis : {Axis::x, Axis::y}) {
    const Coord at = comm.topology().coord_of(me);
    const Block mine = block_of(n, comm.topology().dim(axis), axis == Axis::x ? at.x : at.y);
    std::vector<int> ref(mine.count), got(mine.count);
    reduce_scatter_axis(in.data(), n, ref.data(), mine.count, DataType::i32, ReduceOp::sum, axis,
                        comm);
    reduce_scatter_axis(cin, std::span<int>(got), ReduceOp::sum, axis, comm);
    CHECK(all_ranks(got == ref));
    std::fill(got.begin(), got.end(), 0);
    ireduce_scatter_axis(cin, std::span<int>(got), ReduceOp::sum, axis, comm).wait();
    CHECK(all_ranks(got == ref));
    std::vector<int> gref(n), gin(in);
    allgather_axis(in.data() + mine.offset, mine.count, gref.data(), n, DataType::i32, axis, comm);
    allgather_axis(std::span<int>(gin), axis, comm);
    CHECK(all_ranks(gin == gref));
    std::vector<int> gnb(n);
    iallgather_axis(std::span<const int>(in).subspan(mine.offset, mine.count), std::span<int>(gnb),
                    axis, comm)
        .wait();
    CHECK(all_ranks(gnb == gref));
  }
}
