// The communicator's `auto`: its tuning (rank 0's TOROID_TUNING file, sent to every rank so all
// price alike), its link classes (agreed across ranks) and the TOROID_LOG=info lines.
#pragma once

#include <memory>

#include "api/communicator_impl.hpp"

namespace toroid::api {

// Collective over m.comm; throws InvalidArgument on every rank alike (an unreadable or malformed
// tuning file, or one without a link class the communicator uses).
std::unique_ptr<model::Selector> make_selector(const Communicator::Impl& m);
// `auto` along axes: the communicator's links and tuning priced on this rank's group's
// sub-torus (Torus::along, its members' nodes), without TOROID_ALGO's rules (they name the
// whole communicator's sizes). Local: every member of the group builds the same one.
std::unique_ptr<model::Selector> make_selector_along(const Communicator::Impl& m, Axes axes);

}  // namespace toroid::api
