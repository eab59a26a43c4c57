// Waits that may run on a thread holding Python's GIL release it for their duration.
//
// The completer thread may drop the last reference to a tensor whose Python object is then
// freed, which takes the GIL. A thread that holds the GIL and blocks on the completer (joining
// it when the group is destroyed from Python, waiting for a work) would deadlock with it.
#pragma once

#include <Python.h>

namespace toroid::torch_backend {

class ReleaseGilIfHeld {
 public:
  ReleaseGilIfHeld()
      : saved_(Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~ReleaseGilIfHeld() {
    if (saved_) PyEval_RestoreThread(saved_);
  }
  ReleaseGilIfHeld(const ReleaseGilIfHeld&) = delete;
  ReleaseGilIfHeld& operator=(const ReleaseGilIfHeld&) = delete;

 private:
  PyThreadState* saved_;
};

}  // namespace toroid::torch_backend
