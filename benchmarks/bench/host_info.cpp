#include "bench/host_info.hpp"

#include <hwloc.h>

#include <cstdlib>

namespace toroid::bench {

HostInfo host_info() {
  HostInfo h;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return h;
  if (hwloc_topology_load(topo) == 0) {
    h.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    h.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      char* text = nullptr;
      if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && text) {
        h.binding = text;
        std::free(text);
      }
    }
    if (set) hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  return h;
}

}  // namespace toroid::bench
