// What hwloc sees of this host, for toroid-bench's run header (the library does not use hwloc).
#pragma once

#include <string>

namespace toroid::bench {

struct HostInfo {
  int cores = 0;        // physical cores of this host (hwloc)
  int pus = 0;          // hardware threads
  std::string binding;  // cpuset this process is bound to, as hwloc prints it
};
HostInfo host_info();

}  // namespace toroid::bench
