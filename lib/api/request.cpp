// Request: the caller's handle on a collective in flight (request.hpp states the rules).
#include "toroid/request.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <exception>

#include "api/request_state.hpp"
#include "toroid/error.hpp"

namespace toroid {
namespace {

void require_active(const Request::State* s, const char* call) {
  if (!s)
    throw InvalidArgument(
        fmt::format("Request::{}: the request is empty (default-constructed or moved from)", call));
  if (!s->started)
    throw InvalidArgument(
        fmt::format("Request::{} on rank {}: {} is not active ({})", call, s->rank, s->what.text(),
                    s->persistent ? "start() it first" : "it has completed already"));
}

}  // namespace

Request::Request() noexcept = default;
Request::Request(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
Request::~Request() = default;  // an unfinished op stays with the engine and completes there

bool Request::active() const noexcept { return state_ && state_->started; }
bool Request::persistent() const noexcept { return state_ && state_->persistent; }

bool Request::is_complete() const {
  if (!state_ || !state_->started) return false;
  if (state_->stock) return state_->stock->complete();
  auto progress = state_->executor.lock();
  if (!progress) return true;
  return progress->finished(*state_->op);
}

bool Request::test() {
  require_active(state_.get(), "test");
  bool done = true;  // with no communicator left: its destructor completed the op
  try {
    if (state_->stock)
      done = state_->stock->test();
    else if (auto progress = state_->executor.lock())
      done = progress->test(*state_->op);
  } catch (...) {
    state_->started = false;
    throw;
  }
  if (done) state_->started = false;
  return done;
}

void Request::wait() {
  require_active(state_.get(), "wait");
  state_->started = false;
  if (state_->stock)
    api::wait_stock(*state_->stock);
  else if (auto progress = state_->executor.lock())
    progress->wait(*state_->op);
}

void Request::start() {
  if (!state_)
    throw InvalidArgument(
        "Request::start: the request is empty (default-constructed or moved from)");
  if (!state_->persistent)
    throw InvalidArgument(
        fmt::format("Request::start on rank {}: {} is not persistent (made by allreduce_init, "
                    "reduce_scatter_init or allgather_init)",
                    state_->rank, state_->what.text()));
  if (state_->started)
    throw InvalidArgument(
        fmt::format("Request::start on rank {}: {} is still active (wait for it first)",
                    state_->rank, state_->what.text()));
  auto progress = state_->executor.lock();
  if (!progress)
    throw InvalidArgument(fmt::format(
        "Request::start on rank {}: its communicator has been destroyed", state_->rank));
  if (state_->stock)
    state_->stock->start();
  else
    progress->start(state_->op);
  state_->started = true;
}

void wait_all(std::span<Request> requests) {
  std::exception_ptr first;
  for (Request& r : requests) {
    if (!r.active()) continue;
    try {
      r.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::size_t wait_any(std::span<Request> requests) {
  for (;;) {
    bool any = false;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!requests[i].active()) continue;
      any = true;
      if (requests[i].test()) return i;
    }
    if (!any) return requests.size();
    sched_yield();
  }
}

}  // namespace toroid
