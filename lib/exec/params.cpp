#include "exec/params.hpp"

#include <fmt/format.h>

namespace toroid::exec {

std::string CallName::text() const {
  if (!named) return "collective";
  return fmt::format("{}{}{}{} ({})", form, to_string(collective), blocks_vary ? "v" : "", along,
                     to_string(algorithm));
}

}  // namespace toroid::exec
