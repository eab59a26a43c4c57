// Shared by the fuzz targets: run one parse, accept a value (checked by the caller) or one of the
// errors the parser documents; anything else (another exception, a crash, a sanitizer report)
// ends the run with the input saved by libFuzzer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "toroid/error.hpp"

namespace toroid::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) fail(what);
}

// Calls f(); InvalidArgument and TopologyError are the documented answers to bad text.
template <class F>
void expect_value_or_error(F&& f) {
  try {
    f();
  } catch (const InvalidArgument&) {
  } catch (const TopologyError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace toroid::fuzz
