// A Python object seen as one contiguous vector toroid can run a collective on: objects with
// the buffer protocol (numpy arrays, memoryviews, array.array) first, then DLPack tensors
// (`__dlpack__`: CPU torch tensors, bfloat16 included), without a copy.
//
//   obj ──buffer protocol──> Py_buffer (format, strides, readonly)  ┐
//       └─__dlpack__()─────> DLManagedTensor (dtype, strides, device)┴─> View{data, count, type}
//
// A View owns what keeps the memory valid (the Py_buffer, or the DLPack tensor whose deleter
// it calls), so a non-blocking collective can hold it until it completes. Anything toroid
// cannot use exactly as it is (non-contiguous, read-only where it must write, a device other
// than the CPU, an unsupported dtype) is an InvalidArgument naming the argument: never a silent
// copy whose result would not reach the caller's object.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "toroid/types.hpp"

namespace toroid::python {

struct View {
  void* data = nullptr;
  std::uint64_t count = 0;
  DataType type = DataType::f32;
  bool readonly = false;
  std::shared_ptr<void> owner;  // the Py_buffer or the DLPack tensor; released with the last copy
};

// `name`: the argument's name in messages ("x", "out"); `call`: "allreduce", ...
// `writable`: the collective writes into it.
View view_of(pybind11::handle obj, const char* name, const std::string& call, bool writable);

// numpy-style dtype name of a toroid type: "float32", "bfloat16", ...
const char* dtype_name(DataType t);

}  // namespace toroid::python
