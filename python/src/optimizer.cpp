// `_toroid.ShardedOptimizer` and `_toroid.GradientReducer`: the arrays are viewed once (and
// kept alive by the Python object, since the C++ objects hold spans into them); settings come
// as keyword arguments named as the C++ fields. Conversion errors are agreed across ranks
// always (construction is collective and rare).
#include "toroid/optimizer.hpp"

#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "tensor.hpp"
#include "toroid/error.hpp"
#include "toroid/gradient_reducer.hpp"

namespace py = pybind11;

namespace toroid::python {
namespace {

// (name, array...) entries of a list; `arity` arrays each.
std::vector<py::tuple> entries(const py::object& list, std::size_t arity, const char* owner,
                               const char* what) {
  std::vector<py::tuple> out;
  for (const auto& item : py::iter(list)) {
    if (!py::isinstance<py::tuple>(item) && !py::isinstance<py::list>(item))
      throw InvalidArgument(fmt::format("{}: every {} is a tuple ({}), got a {}", owner, what,
                                        arity == 2 ? "name, weights, grads" : "name, grads",
                                        std::string(py::str(item.get_type().attr("__name__")))));
    py::tuple t = py::tuple(py::reinterpret_borrow<py::object>(item));
    if (t.size() != arity + 1)
      throw InvalidArgument(fmt::format("{}: {} {} has {} fields, expected {}", owner, what,
                                        out.size(), t.size(), arity + 1));
    out.push_back(t);
  }
  return out;
}

template <class T>
T take(py::dict& kw, const char* key, T fallback) {
  if (!kw.contains(key)) return fallback;
  T v = kw[key].cast<T>();
  PyDict_DelItemString(kw.ptr(), key);
  return v;
}

void no_more(const py::dict& kw, const char* owner) {
  for (const auto& [k, v] : kw) {
    (void)v;
    throw InvalidArgument(fmt::format("{}: unknown setting '{}'", owner, std::string(py::str(k))));
  }
}

OptimizerConfig optimizer_config(py::dict kw) {
  OptimizerConfig c;
  c.kind = parse_optimizer_kind(take<std::string>(kw, "kind", std::string(to_string(c.kind))));
  c.learning_rate = take(kw, "learning_rate", c.learning_rate);
  if (kw.contains("schedule")) {
    auto f = kw["schedule"].cast<std::function<double(std::int64_t, double)>>();
    PyDict_DelItemString(kw.ptr(), "schedule");
    // step() runs with the GIL released; the schedule is Python.
    c.schedule = [f](std::int64_t step, double base) {
      py::gil_scoped_acquire gil;
      return f(step, base);
    };
  }
  c.momentum = take(kw, "momentum", c.momentum);
  c.nesterov = take(kw, "nesterov", c.nesterov);
  c.beta1 = take(kw, "beta1", c.beta1);
  c.beta2 = take(kw, "beta2", c.beta2);
  c.epsilon = take(kw, "epsilon", c.epsilon);
  c.weight_decay = take(kw, "weight_decay", c.weight_decay);
  c.no_weight_decay = take(kw, "no_weight_decay", c.no_weight_decay);
  c.no_trust_ratio = take(kw, "no_trust_ratio", c.no_trust_ratio);
  c.lars_trust_coefficient = take(kw, "lars_trust_coefficient", c.lars_trust_coefficient);
  c.max_grad_norm = take(kw, "max_grad_norm", c.max_grad_norm);
  c.shard = take(kw, "shard", c.shard);
  c.bf16_gradients = take(kw, "bf16_gradients", c.bf16_gradients);
  c.average = take(kw, "average", c.average);
  c.bucket_bytes = take(kw, "bucket_bytes", c.bucket_bytes);
  c.first_bucket_bytes = take(kw, "first_bucket_bytes", c.first_bucket_bytes);
  c.rebuild_buckets = take(kw, "rebuild_buckets", c.rebuild_buckets);
  no_more(kw, "ShardedOptimizer");
  return c;
}

ReducerConfig reducer_config(py::dict kw) {
  ReducerConfig c;
  c.bucket_bytes = take(kw, "bucket_bytes", c.bucket_bytes);
  c.first_bucket_bytes = take(kw, "first_bucket_bytes", c.first_bucket_bytes);
  c.bf16 = take(kw, "bf16", c.bf16);
  c.average = take(kw, "average", c.average);
  c.rebuild_buckets = take(kw, "rebuild_buckets", c.rebuild_buckets);
  if (kw.contains("algorithm") && !kw["algorithm"].is_none())
    c.algorithm = parse_algorithm(kw["algorithm"].cast<std::string>());
  if (kw.contains("algorithm")) PyDict_DelItemString(kw.ptr(), "algorithm");
  no_more(kw, "GradientReducer");
  return c;
}

// Python errors from casts (a wrong type for a setting) become InvalidArgument, so that
// `checked` agrees on them across ranks.
template <class F>
auto converting(const char* owner, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const py::cast_error& e) {
    throw InvalidArgument(
        fmt::format("{}: a setting or entry has the wrong type ({})", owner, e.what()));
  } catch (py::error_already_set& e) {
    throw InvalidArgument(fmt::format("{}: {}", owner, e.what()));
  }
}

struct PyOptimizer {
  std::vector<View> arrays;  // weights and gradients, alive as long as the optimizer
  std::unique_ptr<ShardedOptimizer> opt;
};

struct PyReducer {
  std::vector<View> arrays;
  std::unique_ptr<GradientReducer> reducer;
};

py::dict report_dict(const StepReport& r) {
  py::dict d;
  d["step"] = r.step, d["learning_rate"] = r.learning_rate, d["grad_norm"] = r.grad_norm;
  d["clip_scale"] = r.clip_scale, d["reduce_seconds"] = r.reduce_seconds;
  d["update_seconds"] = r.update_seconds, d["gather_seconds"] = r.gather_seconds;
  return d;
}

// ready(name) or ready(index).
template <class T>
void ready(T& target, const py::object& which) {
  if (py::isinstance<py::str>(which)) {
    const std::string name = which.cast<std::string>();
    py::gil_scoped_release nogil;
    target.ready(std::string_view(name));
  } else {
    const auto index = which.cast<std::size_t>();
    py::gil_scoped_release nogil;
    target.ready(index);
  }
}

}  // namespace

void bind_optimizer(py::module_& m) {
  // OptimizerConfig's defaults (toroid/optimizer.hpp) by their C++ names: toroid.optim's
  // signature reads them, so each default is written once.
  m.def("optimizer_defaults", [] {
    const OptimizerConfig c;
    py::dict d;
    d["kind"] = std::string(to_string(c.kind));
    d["learning_rate"] = c.learning_rate;
    d["momentum"] = c.momentum;
    d["nesterov"] = c.nesterov;
    d["beta1"] = c.beta1;
    d["beta2"] = c.beta2;
    d["epsilon"] = c.epsilon;
    d["weight_decay"] = c.weight_decay;
    d["lars_trust_coefficient"] = c.lars_trust_coefficient;
    d["max_grad_norm"] = c.max_grad_norm;
    d["shard"] = c.shard;
    d["bf16_gradients"] = c.bf16_gradients;
    d["average"] = c.average;
    d["bucket_bytes"] = c.bucket_bytes;
    d["first_bucket_bytes"] = c.first_bucket_bytes;
    d["rebuild_buckets"] = c.rebuild_buckets;
    return d;
  });
  m.def(
      "state_names",
      [](const std::string& kind) { return state_names(parse_optimizer_kind(kind)); },
      py::arg("kind"), "The state arrays a kind keeps, in torch's names (state()'s keys)");
  py::class_<PyOptimizer>(m, "ShardedOptimizer")
      .def(py::init([](PyCommunicator& c, const py::object& params, py::kwargs kw) {
             auto& comm = c.get();
             auto self = std::make_unique<PyOptimizer>();
             auto [list, config] = checked(comm, true, [&] {
               return converting("ShardedOptimizer", [&] {
                 std::vector<Parameter> list;
                 for (const auto& t : entries(params, 2, "ShardedOptimizer", "parameter")) {
                   const std::string name = t[0].cast<std::string>();
                   const std::string call = "ShardedOptimizer parameter '" + name + "'";
                   View w = view_of(t[1], "weights", call, true);
                   View g = view_of(t[2], "grads", call, false);
                   if (w.type != DataType::f32)
                     throw InvalidArgument(fmt::format("{}: weights are {}, expected float32", call,
                                                       dtype_name(w.type)));
                   std::span<float> ws(static_cast<float*>(w.data), w.count);
                   if (g.type == DataType::bf16)
                     list.emplace_back(
                         name, ws,
                         std::span<const bfloat16>(static_cast<const bfloat16*>(g.data), g.count));
                   else if (g.type == DataType::f32)
                     list.emplace_back(
                         name, ws,
                         std::span<const float>(static_cast<const float*>(g.data), g.count));
                   else
                     throw InvalidArgument(
                         fmt::format("{}: grads are {}, expected float32 or bfloat16", call,
                                     dtype_name(g.type)));
                   self->arrays.push_back(std::move(w));
                   self->arrays.push_back(std::move(g));
                 }
                 return std::pair(std::move(list), optimizer_config(kw));
               });
             });
             py::gil_scoped_release nogil;
             self->opt =
                 std::make_unique<ShardedOptimizer>(comm, std::move(list), std::move(config));
             return self;
           }),
           py::arg("comm"), py::arg("params"))
      .def("step",
           [](PyOptimizer& o) {
             StepReport r;
             {
               py::gil_scoped_release nogil;
               r = o.opt->step();
             }
             return report_dict(r);
           })
      .def("ready", [](PyOptimizer& o, const py::object& which) { ready(*o.opt, which); })
      .def("poll",
           [](PyOptimizer& o) {
             py::gil_scoped_release nogil;
             o.opt->poll();
           })
      .def("save",
           [](PyOptimizer& o, const std::string& path) {
             py::gil_scoped_release nogil;
             o.opt->save(path);
           })
      .def("load",
           [](PyOptimizer& o, const std::string& path) {
             py::gil_scoped_release nogil;
             o.opt->load(path);
           })
      .def(
          "state",
          [](PyOptimizer& o) {
            OptimizerState st;
            {
              py::gil_scoped_release nogil;
              st = o.opt->state();
            }
            py::dict arrays;
            for (std::size_t a = 0; a < st.arrays.size(); ++a)
              arrays[py::str(st.names[a])] = py::array_t<float>(
                  static_cast<py::ssize_t>(st.arrays[a].size()), st.arrays[a].data());
            py::dict d;
            d["steps"] = st.steps;
            d["arrays"] = arrays;
            return d;
          },
          "Collective: {'steps': n, 'arrays': {name: float32 array}}, every tensor's state end "
          "to end in registration order, the same at any rank count")
      .def(
          "set_state",
          [](PyOptimizer& o, std::int64_t steps, const py::dict& arrays) {
            OptimizerState st;
            st.steps = steps;
            for (const auto& [k, v] : arrays) {
              st.names.push_back(py::str(k));
              auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(v);
              if (!a)
                throw InvalidArgument(fmt::format(
                    "ShardedOptimizer.set_state: state array '{}' is not a float32 array",
                    st.names.back()));
              st.arrays.emplace_back(a.data(), a.data() + a.size());
            }
            py::gil_scoped_release nogil;
            o.opt->set_state(st);
          },
          py::arg("steps"), py::arg("arrays"),
          "Collective: set the state from state()'s form, taken at any rank count")
      .def_property_readonly("steps_taken",
                             [](const PyOptimizer& o) { return o.opt->steps_taken(); })
      .def_property_readonly("state_bytes",
                             [](const PyOptimizer& o) { return o.opt->state_bytes(); })
      .def_property_readonly("shard_elements",
                             [](const PyOptimizer& o) { return o.opt->shard_elements(); })
      .def_property_readonly("trust_ratios",
                             [](const PyOptimizer& o) {
                               const auto t = o.opt->trust_ratios();
                               return std::vector<double>(t.begin(), t.end());
                             })
      .def("buckets", [](const PyOptimizer& o) { return o.opt->buckets(); });

  py::class_<PyReducer>(m, "GradientReducer")
      .def(py::init([](PyCommunicator& c, const py::object& grads, py::kwargs kw) {
             auto& comm = c.get();
             auto self = std::make_unique<PyReducer>();
             auto [list, config] = checked(comm, true, [&] {
               return converting("GradientReducer", [&] {
                 std::vector<Gradient> list;
                 for (const auto& t : entries(grads, 1, "GradientReducer", "gradient")) {
                   const std::string name = t[0].cast<std::string>();
                   View g = view_of(t[1], "grads", "GradientReducer gradient '" + name + "'", true);
                   if (g.type == DataType::f32)
                     list.emplace_back(name,
                                       std::span<float>(static_cast<float*>(g.data), g.count));
                   else if (g.type == DataType::bf16)
                     list.emplace_back(
                         name, std::span<bfloat16>(static_cast<bfloat16*>(g.data), g.count));
                   else
                     throw InvalidArgument(fmt::format(
                         "GradientReducer gradient '{}': grads are {}, expected float32 or "
                         "bfloat16",
                         name, dtype_name(g.type)));
                   self->arrays.push_back(std::move(g));
                 }
                 return std::pair(std::move(list), reducer_config(kw));
               });
             });
             py::gil_scoped_release nogil;
             self->reducer = std::make_unique<GradientReducer>(comm, std::move(list), config);
             return self;
           }),
           py::arg("comm"), py::arg("grads"))
      .def("ready", [](PyReducer& r, const py::object& which) { ready(*r.reducer, which); })
      .def("poll",
           [](PyReducer& r) {
             py::gil_scoped_release nogil;
             r.reducer->poll();
           })
      .def("finish",
           [](PyReducer& r) {
             py::gil_scoped_release nogil;
             r.reducer->finish();
           })
      .def("buckets", [](const PyReducer& r) { return r.reducer->buckets(); });
}

}  // namespace toroid::python
