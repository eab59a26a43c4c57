// The communicator's `auto`: its tuning (rank 0's TOROID_TUNING file, sent to every rank so all
// price alike), its link classes (agreed across ranks) and the TOROID_LOG=info lines.
#pragma once

#include <memory>

#include "api/communicator_impl.hpp"

namespace toroid::api {

// Collective over m.comm; throws InvalidArgument on every rank alike (an unreadable or malformed
// tuning file, or one without a link class the communicator uses).
std::unique_ptr<model::Selector> make_selector(const Communicator::Impl& m);

}  // namespace toroid::api
