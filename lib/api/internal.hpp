// What the project's own code above the API (the preload, the Python bindings, the tools and
// the tests) reaches behind the public headers: a communicator's state, and making a request.
// Not installed; programs outside the project have the public API only.
#pragma once

#include <memory>
#include <utility>

#include "api/communicator_impl.hpp"
#include "api/request_state.hpp"

namespace toroid::internal {

struct Access {
  static Communicator::Impl& impl(Communicator& c) noexcept { return *c.impl_; }
  static const Communicator::Impl& impl(const Communicator& c) noexcept { return *c.impl_; }
  static Request request(std::shared_ptr<Request::State> s) noexcept {
    return Request(std::move(s));
  }
};

inline Communicator::Impl& impl(Communicator& c) noexcept { return Access::impl(c); }
inline const Communicator::Impl& impl(const Communicator& c) noexcept { return Access::impl(c); }
inline Request make_request(std::shared_ptr<Request::State> s) noexcept {
  return Access::request(std::move(s));
}

}  // namespace toroid::internal
