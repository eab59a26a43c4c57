// What every MPI collective test needs: inputs with exact results, the stock reference, one
// checked call of a collective, and the shapes a rank count allows.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "core/element.hpp"
#include "toroid/toroid.hpp"

namespace toroid::testing {

inline const DataType kTypes[] = {DataType::f32,  DataType::f64, DataType::f16,
                                  DataType::bf16, DataType::i32, DataType::i64};
inline const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                ReduceOp::avg};

// The types and ops the sweeps run at p ranks. Types and ops meet the data in the kernels, which
// do not change with the rank count: up to TOROID_TEST_EVERY_TYPE_UP_TO ranks (4 in the Release
// tree) the sweeps run every one. Beyond, what is new is the shape (3x2, 4x2, 2x4, 2x2x2) on
// oversubscribed cores, where every call costs a round of context switches, or the tree's own
// question (the sanitizers', MPICH's): one type of each element size and kind (bf16, f32, i64)
// and one op of each kind (sum, arithmetic; max, a selection; avg, which divides at the end).
#ifndef TOROID_TEST_EVERY_TYPE_UP_TO
#define TOROID_TEST_EVERY_TYPE_UP_TO 4
#endif
inline std::span<const DataType> sweep_types(int p) {
  static const DataType few[] = {DataType::bf16, DataType::f32, DataType::i64};
  return p <= TOROID_TEST_EVERY_TYPE_UP_TO ? std::span<const DataType>(kTypes)
                                           : std::span<const DataType>(few);
}
inline std::span<const ReduceOp> sweep_ops(int p) {
  static const ReduceOp few[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::avg};
  return p <= TOROID_TEST_EVERY_TYPE_UP_TO ? std::span<const ReduceOp>(kOps)
                                           : std::span<const ReduceOp>(few);
}

inline MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::prod:
      return MPI_PROD;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::max:
      return MPI_MAX;
    default:
      return MPI_SUM;
  }
}

inline std::vector<std::uint64_t> counts(int p) {
  return {0, 1, std::uint64_t(p - 1), std::uint64_t(p), std::uint64_t(p + 1), 1000, (1u << 20) + 3};
}

// Reference for (op, count): the stock MPI reduction of the inputs as doubles.
inline std::vector<double> reference(ReduceOp op, std::uint64_t n, int rank, int p) {
  std::vector<double> mine(n), all(n);
  for (std::uint64_t i = 0; i < n; ++i) mine[i] = exact_input(op, rank, i);
  MPI_Allreduce(mine.data(), all.data(), static_cast<int>(n), MPI_DOUBLE, mpi_op(op),
                MPI_COMM_WORLD);
  if (op == ReduceOp::avg)
    for (double& v : all) v /= p;
  return all;
}

// Whether `got` matches the reference value `want` stored in type t (avg may round differently).
inline bool matches(DataType t, ReduceOp op, double got, double want) {
  if (op != ReduceOp::avg) {
    std::byte b[8];
    store_as(t, b, want);
    return got == load_as_double(t, b);
  }
  const double tol = t == DataType::bf16  ? 0x1p-7
                     : t == DataType::f16 ? 0x1p-10
                     : t == DataType::f32 ? 1e-6
                                          : 1e-12;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

struct Case {
  Algorithm algo;
  DataType type;
  ReduceOp op;
  std::uint64_t n;
  bool in_place;
  std::string describe(std::string_view what) const {
    std::ostringstream s;
    s << what << " algo=" << to_string(algo) << " type=" << to_string(type)
      << " op=" << to_string(op) << " count=" << n << (in_place ? " in-place" : " out-of-place");
    return s.str();
  }
};

// The input and output vectors of a case. A sweep keeps one across the cases of one byte size:
// a fresh vector of megabytes costs its page faults (under the sanitizers a fresh mapping every
// time), which were most of a sweep's time. Each is exactly its case's size, so a write past
// the end still lands in the allocator's red zone; a new size gets new vectors.
struct CaseBuffers {
  std::vector<std::byte> in, out;
  void prepare(std::size_t bytes) {
    if (in.size() != bytes) {
      std::vector<std::byte>(bytes).swap(in);
      std::vector<std::byte>(bytes).swap(out);
    }
    std::fill(out.begin(), out.end(), std::byte{0x7f});  // what no collective writes
  }
};

// Runs one case of `coll` on `bufs`; returns the number of wrong elements on this rank.
inline std::uint64_t run_case(Collective coll, const Case& c, Communicator& comm,
                              const std::vector<double>& ref, CaseBuffers& bufs) {
  const int p = comm.size(), r = comm.rank();
  const std::size_t es = size_of(c.type);
  const Block own = block_of(c.n, p, r);
  bufs.prepare(c.n * es);
  std::vector<std::byte>& in = bufs.in;
  std::vector<std::byte>& out = bufs.out;
  for (std::uint64_t i = 0; i < c.n; ++i)
    store_as(c.type, in.data() + i * es, exact_input(c.op, r, i));
  std::uint64_t wrong = 0;
  auto expect = [&](const std::byte* got, std::uint64_t len, std::uint64_t ref_at) {
    for (std::uint64_t i = 0; i < len; ++i)
      wrong += !matches(c.type, c.op, load_as_double(c.type, got + i * es), ref[ref_at + i]);
  };
  switch (coll) {
    case Collective::alltoall: {
      // p blocks of n / p (the count rounded down to them); block q of the output is rank q's
      // block for this rank. Never in place.
      const std::uint64_t b = c.n / static_cast<std::uint64_t>(p),
                          n = b * static_cast<std::uint64_t>(p);
      alltoall(in.data(), n, out.data(), n, c.type, comm, c.algo);
      for (std::uint64_t i = 0; i < n; ++i) {
        std::byte v[8];
        store_as(
            c.type, v,
            exact_input(c.op, static_cast<int>(i / b), static_cast<std::uint64_t>(r) * b + i % b));
        wrong += std::memcmp(v, out.data() + i * es, es) != 0;
      }
      break;
    }
    case Collective::broadcast: {
      // From a root that moves with the count; in place by nature (one buffer).
      const int root = static_cast<int>(c.n % static_cast<std::uint64_t>(p));
      broadcast(in.data(), c.n, c.type, root, comm, c.algo);
      for (std::uint64_t i = 0; i < c.n; ++i) {
        std::byte v[8];
        store_as(c.type, v, exact_input(c.op, root, i));
        wrong += std::memcmp(v, in.data() + i * es, es) != 0;
      }
      break;
    }
    case Collective::allreduce:
      if (c.in_place) {
        allreduce(in.data(), c.n, in.data(), c.n, c.type, c.op, comm, c.algo);
        expect(in.data(), c.n, 0);
      } else {
        allreduce(in.data(), c.n, out.data(), c.n, c.type, c.op, comm, c.algo);
        expect(out.data(), c.n, 0);
      }
      break;
    case Collective::reduce_scatter:
      if (c.in_place) {
        reduce_scatter(in.data(), c.n, in.data(), c.n, c.type, c.op, comm, c.algo);
        expect(in.data() + own.offset * es, own.count, own.offset);
      } else {
        reduce_scatter(in.data(), c.n, out.data(), own.count, c.type, c.op, comm, c.algo);
        expect(out.data(), own.count, own.offset);
      }
      break;
    case Collective::allgather: {
      // Every rank contributes its own block of its input; the result is the blocks side by side.
      std::vector<double> gathered(c.n);
      for (int q = 0; q < p; ++q) {
        const Block b = block_of(c.n, p, q);
        for (std::uint64_t i = 0; i < b.count; ++i) {
          std::byte v[8];
          store_as(c.type, v, exact_input(c.op, q, b.offset + i));
          gathered[b.offset + i] = load_as_double(c.type, v);
        }
      }
      if (c.in_place) {
        std::copy(in.begin() + own.offset * es, in.begin() + (own.offset + own.count) * es,
                  out.begin() + own.offset * es);
        allgather(out.data() + own.offset * es, own.count, out.data(), c.n, c.type, comm, c.algo);
      } else {
        allgather(in.data() + own.offset * es, own.count, out.data(), c.n, c.type, comm, c.algo);
      }
      for (std::uint64_t i = 0; i < c.n; ++i)
        wrong += load_as_double(c.type, out.data() + i * es) != gathered[i];
      break;
    }
  }
  return wrong;
}

// Runs one case of `coll` on vectors of its own.
inline std::uint64_t run_case(Collective coll, const Case& c, Communicator& comm,
                              const std::vector<double>& ref) {
  CaseBuffers bufs;
  return run_case(coll, c, comm, ref, bufs);
}

// Shapes of the current rank count: 2D factorizations both ways (torus and mesh), Nx1, 1xN.
inline std::vector<std::string> shapes(int p) {
  std::vector<std::string> out{std::to_string(p) + "x1", "1x" + std::to_string(p),
                               std::to_string(p) + "x1:wrap=none"};
  for (int x = 2; x < p; ++x)
    if (p % x == 0) {
      const std::string s = std::to_string(x) + "x" + std::to_string(p / x);
      out.push_back(s);
      out.push_back(s + ":wrap=x");
    }
  return out;
}

}  // namespace toroid::testing
