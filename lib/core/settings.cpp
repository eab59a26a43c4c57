#include "toroid/settings.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace toroid {
namespace {

constexpr SettingScope kComm = SettingScope::communicator;

constexpr Setting kSettings[] = {
    {"topology", "TOROID_TOPOLOGY", "auto, 4x2, 4x2:wrap=x, 16x16x16, 4x4x8:twist, ...", "auto"},
    {"algorithm", "TOROID_ALGO", "an algorithm name (auto, ring, torus2d_both, ...)", "auto"},
    {"algorithm_rules", "TOROID_ALGO", "rules: allreduce:0-64K=recursive_doubling,64K-inf=ring",
     "none"},
    {"segment_bytes", "TOROID_SEGMENT_BYTES", "64 B - 1 GiB, K/M/G suffixes",
     "256K; 56K across nodes"},
    {"check", "TOROID_CHECK", "1/on, 0/off", "off (on in debug builds)"},
    {"nodes", "TOROID_NODES", "ranks per node, 3,2,3; real", "the real nodes"},
    {"timeout_seconds", "TOROID_TIMEOUT", "seconds, 0: off", "off"},
    {"transport", "TOROID_TRANSPORT", "auto, shm, mpi", "auto"},
    {"progress", "TOROID_PROGRESS", "caller, thread", "caller"},
    {"slot_stores", "TOROID_SLOT_STORES", "auto, cached, streaming", "auto"},
    {"trace", "TOROID_TRACE", "a file for the timeline", "none"},
    {"", "TOROID_TUNING", "a file from toroid-tune", "built-in"},
    {"", "TOROID_LOG", "off, info", "off", kComm, false},
    {"", "TOROID_ISA", "auto, scalar, avx2, avx512", "auto", SettingScope::process, false},
    {"", "TOROID_MIN_BYTES", "bytes, K/M/G suffixes", "4K", SettingScope::preload},
    {"", "TOROID_THREAD_LEVEL", "program, funneled, multiple", "program", SettingScope::preload},
};

}  // namespace

std::span<const Setting> settings() noexcept { return kSettings; }

const char* setting_from_environment(std::string_view variable) {
  for (const Setting& s : kSettings)
    if (s.variable == variable) {
      const char* v = std::getenv(std::string(variable).c_str());
      return v && *v ? v : nullptr;
    }
  throw std::logic_error("toroid reads " + std::string(variable) +
                         ", which its table of settings (toroid/settings.hpp) does not list");
}

}  // namespace toroid
