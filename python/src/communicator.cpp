// `_toroid.Communicator`, its collectives (blocking and non-blocking) and `_toroid.Request`.
// Arguments are converted with the GIL held; the collective runs with it released, so other
// Python threads run meanwhile. The toroid/__init__.py layer allocates outputs and accepts
// mpi4py communicators.
#include <fmt/format.h>
#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "tensor.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"
#include "toroid/request.hpp"
#include "toroid/settings.hpp"

namespace py = pybind11;

namespace toroid::python {
namespace {

std::optional<Algorithm> algorithm_of(const py::object& a) {
  if (a.is_none()) return std::nullopt;
  return parse_algorithm(a.cast<std::string>());
}

// "x", "xz", 0 (x), 2 (z), or a tuple or list of those: one axis or several (toroid::Axes).
Axes axes_of(const py::object& a) {
  std::string letters;
  const auto add = [&](const py::handle& h) {
    const std::string s = py::str(h);
    const bool number = s.size() == 1 && s[0] >= '0' && s[0] < '0' + Torus::kMaxDimensions;
    letters += number ? std::string(1, "xyzwvu"[s[0] - '0']) : s;
  };
  if (py::isinstance<py::tuple>(a) || py::isinstance<py::list>(a))
    for (const py::handle& h : a) add(h);
  else
    add(a);
  try {
    return Axes::parse(letters);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(
        fmt::format("axis {}: {} (or dimension numbers 0-5)", std::string(py::repr(a)), e.what()));
  }
}

// The input and output of one collective, checked: same type; `out` writable; the same object
// (or the same memory) for in place.
struct Operands {
  View in, out;
  bool in_place() const { return in.data == out.data; }
};

Operands operands(const py::object& x, const py::object& out, const std::string& call,
                  bool in_place_ok = true) {
  Operands o;
  if (out.is_none() || out.is(x)) {
    if (!in_place_ok) throw InvalidArgument(fmt::format("{}: out is required", call));
    o.in = view_of(x, "x", call, true);
    o.out = o.in;
    return o;
  }
  o.in = view_of(x, "x", call, false);
  o.out = view_of(out, "out", call, true);
  if (o.in.type != o.out.type)
    throw InvalidArgument(fmt::format("{}: x is {} and out is {}; they must have the same dtype",
                                      call, dtype_name(o.in.type), dtype_name(o.out.type)));
  return o;
}

struct PyRequest {
  Request request;
  std::vector<View> keep;  // the memory the collective owns until it completes
  py::object result;

  PyRequest(Request r, std::vector<View> k, py::object res)
      : request(std::move(r)), keep(std::move(k)), result(std::move(res)) {}
  PyRequest(const PyRequest&) = delete;
  ~PyRequest() {
    // A request dropped while in flight is completed first: its buffers may not go before.
    if (!request.active()) return;
    try {
      py::gil_scoped_release nogil;
      request.wait();
    } catch (...) {  // reported to nobody: the request was dropped; the collective has ended
    }
  }
  py::object wait() {
    {
      py::gil_scoped_release nogil;
      request.wait();
    }
    keep.clear();
    return result;
  }
  bool test() {
    bool done = false;
    {
      py::gil_scoped_release nogil;
      done = request.test();
    }
    if (done) keep.clear();
    return done;
  }
};

// One binding per collective form. `start` runs the C++ call on the converted operands with the
// GIL released and returns what the caller gets back (nothing, or a Request).
template <class Call>
void run_blocking(const Call& call) {
  py::gil_scoped_release nogil;
  call();
}

std::unique_ptr<PyRequest> run_nonblocking(const std::function<Request()>& start,
                                           std::vector<View> keep, py::object result) {
  Request r;
  {
    py::gil_scoped_release nogil;
    r = start();
  }
  return std::make_unique<PyRequest>(std::move(r), std::move(keep), std::move(result));
}

// Options from keywords, one per field of the table of settings (toroid/settings.hpp, whose
// option names are the keywords): None leaves a field to its variable; a keyword outside the
// table is an error naming the valid ones (tests/python/test_settings.py sets each).
Options options_of(const py::kwargs& keywords) {
  Options o;
  for (const auto& [key, handle] : keywords) {
    const py::object value = py::reinterpret_borrow<py::object>(handle);
    const std::string k = key.cast<std::string>();
    const auto& table = settings();
    if (std::none_of(table.begin(), table.end(), [&](const Setting& s) { return s.option == k; })) {
      std::string valid;
      for (const Setting& s : table)
        if (!s.option.empty()) valid += (valid.empty() ? "" : ", ") + std::string(s.option);
      throw InvalidArgument("Communicator: no keyword '" + k + "' (valid: " + valid + ")");
    }
    if (value.is_none()) continue;
    if (k == "topology")
      o.topology = value.cast<std::string>();
    else if (k == "algorithm")
      o.algorithm = algorithm_of(value);
    else if (k == "algorithm_rules")
      o.algorithm_rules = value.cast<std::string>();
    else if (k == "segment_bytes")
      o.segment_bytes = value.cast<std::size_t>();
    else if (k == "check")
      o.check = value.cast<bool>();
    else if (k == "nodes")
      o.nodes = value.cast<std::string>();
    else if (k == "timeout_seconds")
      o.timeout_seconds = value.cast<double>();
    else if (k == "transport")
      o.transport = parse_transport(value.cast<std::string>());
    else if (k == "progress")
      o.progress = parse_progress_mode(value.cast<std::string>());
    else if (k == "slot_stores")
      o.slot_stores = parse_slot_stores(value.cast<std::string>());
    else if (k == "trace")
      o.trace = value.cast<std::string>();
    else
      throw std::logic_error("Communicator: the table's option " + k + " has no conversion here");
  }
  return o;
}

using C = PyCommunicator;

// The type-erased C++ calls of each family, as the bindings take them (the typed overloads
// make a plain &allreduce ambiguous).
using Reducing = void (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType, ReduceOp,
                          Communicator&, std::optional<Algorithm>);
using ReducingAxis = void (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType, ReduceOp,
                              Axes, Communicator&, std::optional<Algorithm>);
using Gather = void (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType, Communicator&,
                        std::optional<Algorithm>);
using GatherAxis = void (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType, Axes,
                            Communicator&, std::optional<Algorithm>);
using StartReducing = Request (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType,
                                  ReduceOp, Communicator&, std::optional<Algorithm>);
using StartGather = Request (*)(const void*, std::uint64_t, void*, std::uint64_t, DataType,
                                Communicator&, std::optional<Algorithm>);

// MPI's own state and the helpers the package's Python side shares with C++.
void bind_module_functions(py::module_& m) {
  m.def("mpi_initialized", [] {
    int flag = 0;
    MPI_Initialized(&flag);
    return flag != 0;
  });
  m.def("init_mpi", [] {
    // Without mpi4py: MPI initialized here, with the thread level a progress thread needs.
    int flag = 0, provided = 0;
    MPI_Initialized(&flag);
    if (!flag)
      toroid::mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                        "MPI_Init_thread");
  });
  m.def("finalize_mpi", [] {
    int init = 0, done = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&done);
    if (init && !done) MPI_Finalize();
  });
  // The table of settings (toroid/settings.hpp): option, variable, values, default, scope.
  m.def("settings", [] {
    py::list rows;
    for (const Setting& s : settings()) {
      py::dict row;
      row["option"] = std::string(s.option);
      row["variable"] = std::string(s.variable);
      row["values"] = std::string(s.values);
      row["default"] = std::string(s.default_value);
      row["scope"] = s.scope == SettingScope::communicator ? "communicator"
                     : s.scope == SettingScope::process    ? "process"
                                                           : "preload";
      row["must_agree"] = s.must_agree;
      rows.append(row);
    }
    return rows;
  });
  // Every algorithm by name with the collectives it implements (toroid/algorithm.hpp).
  m.def("algorithms", [] {
    py::dict out;
    for (Algorithm a : all_algorithms) {
      py::list runs;
      for (Collective c : all_collectives)
        if (implements(a, c)) runs.append(std::string(to_string(c)));
      out[py::str(std::string(to_string(a)))] = runs;
    }
    return out;
  });
  m.def("world_handle", [] { return static_cast<long long>(MPI_Comm_c2f(MPI_COMM_WORLD)); });
  m.def("element_count", [](const py::object& x) {
    const View v = view_of(x, "x", "element_count", false);
    return py::make_tuple(v.count, dtype_name(v.type));
  });
  m.def("block_of", [](std::uint64_t count, int nranks, int r) {
    const Block b = block_of(count, nranks, r);
    return py::make_tuple(b.offset, b.count);
  });
}

void bind_request(py::module_& m) {
  py::class_<PyRequest>(m, "Request")
      .def("wait", &PyRequest::wait, "Completes the collective; returns its output.")
      .def("test", &PyRequest::test, "One round of progress; True once complete.")
      .def_property_readonly("active", [](const PyRequest& r) { return r.request.active(); });
}

// The communicator itself: construction, what it is, and its memory.
py::class_<C> bind_communicator_state(py::module_& m) {
  py::class_<C> cls(m, "Communicator");
  cls.def(py::init([](long long fortran_handle, const py::kwargs& keywords) {
            const Options o = options_of(keywords);
            const MPI_Comm mpi = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
            auto c = std::make_unique<C>();
            {
              py::gil_scoped_release nogil;
              c->comm = std::make_unique<Communicator>(mpi, o);
            }
            return c;
          }),
          py::arg("handle"))
      .def_property_readonly("rank", [](const C& c) { return c.get().rank(); })
      .def_property_readonly("size", [](const C& c) { return c.get().size(); })
      .def_property_readonly("topology", [](const C& c) { return c.get().shape().to_string(); })
      .def_property_readonly("dims",
                             [](const C& c) {
                               const Torus& t = c.get().shape();
                               py::list sizes;
                               for (int d = 0; d < t.dimensions(); ++d) sizes.append(t.size(d));
                               return py::tuple(sizes);
                             })
      .def_property_readonly(
          "coord",
          [](const C& c) { return py::tuple(py::cast(c.get().shape().coord_of(c.get().rank()))); })
      .def_property_readonly("wraps",
                             [](const C& c) {
                               const Torus& t = c.get().shape();
                               py::list wraps;
                               for (int d = 0; d < t.dimensions(); ++d) wraps.append(t.wraps(d));
                               return py::tuple(wraps);
                             })
      .def(
          "group_along",
          [](const C& c, const py::object& axis) {
            const Torus& t = c.get().shape();
            const Axes a = axes_of(axis);
            return py::make_tuple(py::tuple(py::cast(t.group_along(c.get().rank(), a))),
                                  t.position_along(c.get().rank(), a));
          },
          py::arg("axis"),
          "(members, position): the ranks of this rank's sub-torus along `axis` ('x', 'xz', "
          "('x', 'z')) in its order, and where this rank is among them")
      .def_property_readonly("nodes", [](const C& c) { return c.get().nodes(); })
      .def_property_readonly(
          "algorithm",
          [](const C& c) { return std::string(to_string(c.get().default_algorithm())); })
      .def_property_readonly("transport",
                             [](const C& c) { return std::string(to_string(c.get().transport())); })
      .def_property_readonly(
          "progress", [](const C& c) { return std::string(to_string(c.get().progress_mode())); })
      .def_property_readonly(
          "slot_stores", [](const C& c) { return std::string(to_string(c.get().slot_stores())); })
      .def_property_readonly("checks_arguments",
                             [](const C& c) { return c.get().checks_arguments(); })
      .def("sum_counts",
           [](const C& c, std::uint64_t n) {
             toroid::mpi_check(
                 MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_UINT64_T, MPI_SUM, c.get().mpi_comm()),
                 "MPI_Allreduce");
             return n;
           })

      .def("allocate_bytes",
           [](C& c, std::size_t bytes) {
             void* data = nullptr;
             std::shared_ptr<void> owner;
             {
               py::gil_scoped_release nogil;
               owner = c.get().allocate_bytes(bytes, 1, data);
             }
             // The array's base holds the allocation: it lives as long as any view of it.
             auto* hold = new std::shared_ptr<void>(std::move(owner));
             py::capsule base(hold, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
             return py::array(py::dtype("uint8"), {static_cast<py::ssize_t>(bytes)}, {1}, data,
                              base);
           })
      .def_property_readonly("single_copy_calls",
                             [](const C& c) { return c.get().node_path_calls().single_copy; });
  return cls;
}

// ---- blocking, one family at a time: arguments converted (and, with checking on, agreed
// across ranks), then the C++ call with the GIL released.
void def_reducing(py::class_<C>& cls, const char* name, Reducing f) {
  cls.def(name, [name, f](C& c, const py::object& x, const py::object& out, const std::string& op,
                          const py::object& algo) {
    auto& comm = c.get();
    auto [o, rop, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(operands(x, out, name), parse_reduce_op(op), algorithm_of(algo));
    });
    run_blocking(
        [&] { f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, rop, comm, a); });
  });
}
void def_reducing_axis(py::class_<C>& cls, const char* name, ReducingAxis f) {
  cls.def(name, [name, f](C& c, const py::object& x, const py::object& out, const std::string& op,
                          const py::object& axis, const py::object& algo) {
    auto& comm = c.get();
    auto [o, rop, ax, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(operands(x, out, name), parse_reduce_op(op), axes_of(axis),
                        algorithm_of(algo));
    });
    run_blocking(
        [&] { f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, rop, ax, comm, a); });
  });
}
void def_gather(py::class_<C>& cls, const char* name, Gather f) {
  cls.def(name, [name, f](C& c, const py::object& x, const py::object& out,
                          const py::object& algo) {
    auto& comm = c.get();
    auto [o, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(operands(x, out, name, false), algorithm_of(algo));
    });
    run_blocking([&] { f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, comm, a); });
  });
}
void def_gather_axis(py::class_<C>& cls, const char* name, GatherAxis f) {
  cls.def(name, [name, f](C& c, const py::object& x, const py::object& out, const py::object& axis,
                          const py::object& algo) {
    auto& comm = c.get();
    auto [o, ax, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(operands(x, out, name, false), axes_of(axis), algorithm_of(algo));
    });
    run_blocking(
        [&] { f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, ax, comm, a); });
  });
}
// An alltoallv's counts or offsets: a sequence of non-negative integers (a list, a tuple, a
// numpy array); None: no offsets (packed).
std::vector<std::uint64_t> counts_of(const py::object& v, const char* what, const char* call) {
  std::vector<std::uint64_t> out;
  if (v.is_none()) return out;
  for (const py::handle& h : v) {
    const auto n = py::int_(py::reinterpret_borrow<py::object>(h)).cast<long long>();
    if (n < 0) throw InvalidArgument(fmt::format("{}: {} has a negative entry {}", call, what, n));
    out.push_back(static_cast<std::uint64_t>(n));
  }
  return out;
}

struct ExchangeV {
  Operands o;
  std::vector<std::uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;
  std::optional<Algorithm> algo;
};
ExchangeV exchange_v(const py::object& x, const py::object& out, const py::object& send_counts,
                     const py::object& recv_counts, const py::object& send_offsets,
                     const py::object& recv_offsets, const py::object& algo, const char* call) {
  return {operands(x, out, call, false),
          counts_of(send_counts, "send_counts", call),
          counts_of(send_offsets, "send_offsets", call),
          counts_of(recv_counts, "recv_counts", call),
          counts_of(recv_offsets, "recv_offsets", call),
          algorithm_of(algo)};
}

void bind_blocking(py::class_<C>& cls) {
  def_reducing(cls, "allreduce", &allreduce);
  def_reducing(cls, "reduce_scatter", &reduce_scatter);
  def_gather(cls, "allgather", &allgather);
  def_gather(cls, "alltoall", &alltoall);  // the same arguments: (x, out), out required
  def_reducing_axis(cls, "allreduce_axis", &allreduce_axis);
  def_reducing_axis(cls, "reduce_scatter_axis", &reduce_scatter_axis);
  def_gather_axis(cls, "allgather_axis", &allgather_axis);
  def_gather_axis(cls, "alltoall_axis", &alltoall_axis);  // the same arguments, out required
  cls.def("alltoallv",
          [](C& c, const py::object& x, const py::object& out, const py::object& send_counts,
             const py::object& recv_counts, const py::object& send_offsets,
             const py::object& recv_offsets, const py::object& algo) {
            auto& comm = c.get();
            const ExchangeV v = checked(comm, comm.checks_arguments(), [&] {
              return exchange_v(x, out, send_counts, recv_counts, send_offsets, recv_offsets, algo,
                                "alltoallv");
            });
            run_blocking([&] {
              alltoallv(v.o.in.data, v.o.in.count, {v.send_counts, v.send_offsets}, v.o.out.data,
                        v.o.out.count, {v.recv_counts, v.recv_offsets}, v.o.in.type, comm, v.algo);
            });
          });
  cls.def("broadcast", [](C& c, const py::object& x, int root, const py::object& algo) {
    auto& comm = c.get();
    auto [v, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(view_of(x, "x", "broadcast", true), algorithm_of(algo));
    });
    run_blocking([&] { broadcast(v.data, v.count, v.type, root, comm, a); });
  });
}

// ---- non-blocking: the request keeps the operands alive until it completes, and returns the
// output (`out`, or x in place) from wait().
void def_start_reducing(py::class_<C>& cls, const char* name, StartReducing f) {
  cls.def(name, [name, f](C& c, const py::object& x, const py::object& out, const std::string& op,
                          const py::object& algo) {
    auto& comm = c.get();
    auto [o, rop, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(operands(x, out, name), parse_reduce_op(op), algorithm_of(algo));
    });
    return run_nonblocking(
        [&, o = o, rop = rop, a = a] {
          return f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, rop, comm, a);
        },
        {o.in, o.out}, out.is_none() ? x : out);
  });
}
void def_start_gather(py::class_<C>& cls, const char* name, StartGather f) {
  cls.def(name,
          [name, f](C& c, const py::object& x, const py::object& out, const py::object& algo) {
            auto& comm = c.get();
            auto [o, a] = checked(comm, comm.checks_arguments(), [&] {
              return std::tuple(operands(x, out, name, false), algorithm_of(algo));
            });
            return run_nonblocking(
                [&, o = o, a = a] {
                  return f(o.in.data, o.in.count, o.out.data, o.out.count, o.in.type, comm, a);
                },
                {o.in, o.out}, out);
          });
}
void bind_nonblocking(py::class_<C>& cls) {
  def_start_reducing(cls, "iallreduce", &iallreduce);
  def_start_reducing(cls, "ireduce_scatter", &ireduce_scatter);
  def_start_gather(cls, "iallgather", &iallgather);
  def_start_gather(cls, "ialltoall", &ialltoall);
  cls.def("ialltoallv",
          [](C& c, const py::object& x, const py::object& out, const py::object& send_counts,
             const py::object& recv_counts, const py::object& send_offsets,
             const py::object& recv_offsets, const py::object& algo) {
            auto& comm = c.get();
            const ExchangeV v = checked(comm, comm.checks_arguments(), [&] {
              return exchange_v(x, out, send_counts, recv_counts, send_offsets, recv_offsets, algo,
                                "ialltoallv");
            });
            return run_nonblocking(  // the counts are copied by the call; the arrays are kept
                [&] {
                  return ialltoallv(v.o.in.data, v.o.in.count, {v.send_counts, v.send_offsets},
                                    v.o.out.data, v.o.out.count, {v.recv_counts, v.recv_offsets},
                                    v.o.in.type, comm, v.algo);
                },
                {v.o.in, v.o.out}, out);
          });
  cls.def("ibroadcast", [](C& c, const py::object& x, int root, const py::object& algo) {
    auto& comm = c.get();
    auto [v, a] = checked(comm, comm.checks_arguments(), [&] {
      return std::tuple(view_of(x, "x", "ibroadcast", true), algorithm_of(algo));
    });
    return run_nonblocking(
        [&, v = v, a = a] { return ibroadcast(v.data, v.count, v.type, root, comm, a); }, {v}, x);
  });
}

}  // namespace

void bind_communicator(py::module_& m) {
  bind_module_functions(m);
  bind_request(m);
  py::class_<C> cls = bind_communicator_state(m);
  bind_blocking(cls);
  bind_nonblocking(cls);
}

}  // namespace toroid::python
