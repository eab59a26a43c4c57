#include "tensor.hpp"

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "toroid/error.hpp"

namespace py = pybind11;

namespace toroid::python {
namespace {

const char* kSupported = "float32, float64, float16, bfloat16, int32 or int64";

// Py_buffer format + item size -> toroid type; empty when unsupported.
std::optional<DataType> type_of_format(std::string_view f, py::ssize_t itemsize) {
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() != 1) return std::nullopt;
  switch (f[0]) {
    case 'f':
      return itemsize == 4 ? std::optional(DataType::f32) : std::nullopt;
    case 'd':
      return itemsize == 8 ? std::optional(DataType::f64) : std::nullopt;
    case 'e':
      return itemsize == 2 ? std::optional(DataType::f16) : std::nullopt;
    case 'i':
    case 'l':
    case 'q':
      if (itemsize == 4) return DataType::i32;
      if (itemsize == 8) return DataType::i64;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<DataType> type_of_dlpack(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLFloat && t.bits == 32) return DataType::f32;
  if (t.code == kDLFloat && t.bits == 64) return DataType::f64;
  if (t.code == kDLFloat && t.bits == 16) return DataType::f16;
  if (t.code == kDLBfloat && t.bits == 16) return DataType::bf16;
  if (t.code == kDLInt && t.bits == 32) return DataType::i32;
  if (t.code == kDLInt && t.bits == 64) return DataType::i64;
  return std::nullopt;
}

// Row-major without gaps: stride k equals the product of the later extents (extents of 1
// may have any stride).
template <class Int>
bool compact(int ndim, const Int* shape, const Int* strides, std::int64_t unit) {
  if (strides == nullptr) return true;
  std::int64_t expected = unit;
  for (int k = ndim - 1; k >= 0; --k) {
    if (shape[k] != 1 && strides[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

View from_buffer(py::handle obj, const char* name, const std::string& call, bool writable) {
  auto* raw = new Py_buffer;
  if (PyObject_GetBuffer(obj.ptr(), raw, PyBUF_RECORDS_RO) != 0) {
    delete raw;
    py::error_already_set e;
    throw InvalidArgument(fmt::format("{}: {} refused its buffer: {}", call, name, e.what()));
  }
  std::shared_ptr<Py_buffer> owner(raw, [](Py_buffer* b) {
    py::gil_scoped_acquire gil;
    PyBuffer_Release(b);
    delete b;
  });
  const Py_buffer& b = *owner;
  const auto type = type_of_format(b.format ? b.format : "B", b.itemsize);
  if (!type)
    throw InvalidArgument(fmt::format("{}: {} has element format '{}' ({} bytes), expected {}",
                                      call, name, b.format ? b.format : "B", b.itemsize,
                                      kSupported));
  if (!compact(b.ndim, b.shape, b.strides, b.itemsize))
    throw InvalidArgument(
        fmt::format("{}: {} is not contiguous (a strided view); pass a contiguous copy, "
                    "e.g. numpy.ascontiguousarray, and use that copy afterwards",
                    call, name));
  if (writable && b.readonly)
    throw InvalidArgument(
        fmt::format("{}: {} is read-only and the result is written into it", call, name));
  View v;
  v.data = b.buf;
  v.count = static_cast<std::uint64_t>(b.len / b.itemsize);
  v.type = *type;
  v.readonly = b.readonly != 0;
  v.owner = owner;
  return v;
}

View from_dlpack(py::handle obj, const char* name, const std::string& call) {
  // A refusal (a torch tensor that requires grad, ...) becomes an InvalidArgument, which the
  // cross-rank agreement knows how to share.
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    throw InvalidArgument(fmt::format("{}: {}.__dlpack__() failed: {}", call, name, e.what()));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!managed) throw py::error_already_set();
  // The capsule is consumed: its name changes so it will not call the deleter; we do.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  std::shared_ptr<DLManagedTensor> owner(managed, [](DLManagedTensor* m) {
    if (m->deleter) {
      py::gil_scoped_acquire gil;
      m->deleter(m);
    }
  });
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU)
    throw InvalidArgument(
        fmt::format("{}: {} is on DLPack device type {} (device {}); toroid works on CPU memory",
                    call, name, static_cast<int>(t.device.device_type), t.device.device_id));
  const auto type = type_of_dlpack(t.dtype);
  if (!type)
    throw InvalidArgument(
        fmt::format("{}: {} has DLPack dtype code {} with {} bits x {} lanes, expected {}", call,
                    name, t.dtype.code, t.dtype.bits, t.dtype.lanes, kSupported));
  if (!compact<std::int64_t>(t.ndim, t.shape, t.strides, 1))
    throw InvalidArgument(
        fmt::format("{}: {} is not contiguous (a strided view); pass a contiguous copy, "
                    "e.g. tensor.contiguous(), and use that copy afterwards",
                    call, name));
  std::uint64_t count = 1;
  for (int k = 0; k < t.ndim; ++k) count *= static_cast<std::uint64_t>(t.shape[k]);
  View v;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.count = count;
  v.type = *type;
  v.owner = owner;
  return v;
}

}  // namespace

View view_of(py::handle obj, const char* name, const std::string& call, bool writable) {
  if (obj.is_none()) throw InvalidArgument(fmt::format("{}: {} is None", call, name));
  if (PyObject_CheckBuffer(obj.ptr())) return from_buffer(obj, name, call, writable);
  if (py::hasattr(obj, "__dlpack__")) return from_dlpack(obj, name, call);
  throw InvalidArgument(
      fmt::format("{}: {} is a {}, which has neither the buffer protocol nor __dlpack__ "
                  "(pass a numpy array or a CPU torch tensor)",
                  call, name, std::string(py::str(obj.get_type().attr("__name__")))));
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::f32:
      return "float32";
    case DataType::f64:
      return "float64";
    case DataType::f16:
      return "float16";
    case DataType::bf16:
      return "bfloat16";
    case DataType::i32:
      return "int32";
    case DataType::i64:
      return "int64";
  }
  return "?";
}

}  // namespace toroid::python
