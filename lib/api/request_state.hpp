// What a Request holds: its op, and the communicator's progress (weakly: a request may outlive
// its communicator, whose destructor completes the op first).
#pragma once

#include <memory>
#include <string>

#include "api/executor.hpp"
#include "exec/params.hpp"
#include "exec/stock.hpp"
#include "toroid/request.hpp"

namespace toroid {

struct Request::State {
  std::weak_ptr<api::Executor> executor;
  std::shared_ptr<exec::BoundCollective> op;  // toroid's algorithms
  std::unique_ptr<exec::StockCall> stock;     // the `mpi` algorithm
  exec::CallName what;                        // "non-blocking allreduce (mpi)", for messages
  bool persistent = false;
  bool started = false;  // started and not yet seen complete by test/wait
  int rank = 0;
};

}  // namespace toroid
