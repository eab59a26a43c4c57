// Umbrella header: everything a training program needs.
#pragma once

#include "toroid/algorithm.hpp"
#include "toroid/collectives.hpp"
#include "toroid/communicator.hpp"
#include "toroid/error.hpp"
#include "toroid/gradient_reducer.hpp"
#include "toroid/mpi_helpers.hpp"
#include "toroid/optimizer.hpp"
#include "toroid/request.hpp"
#include "toroid/settings.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"
#include "toroid/typed.hpp"
#include "toroid/types.hpp"
#include "toroid/version.hpp"
