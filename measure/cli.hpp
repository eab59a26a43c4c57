// Command-line pieces shared by toroid-bench, toroid-sim and toroid-tune.
#pragma once

#include <boost/program_options.hpp>
#include <span>
#include <string>
#include <vector>

#include "toroid/algorithm.hpp"

namespace toroid::cli {

// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& text, char sep = ',');

// Parses argv against `d`; boost's errors become InvalidArgument. Sets `help` for --help and
// fills `help_text` with the options' description.
boost::program_options::variables_map parse_command_line(
    const boost::program_options::options_description& d, int argc, char** argv, bool& help,
    std::string& help_text);

// --op: "allreduce,allgather" or "all". Throws InvalidArgument naming --op and the bad name.
std::vector<Collective> parse_collectives(const std::string& text);
// --algo: a comma list of algorithm names, or "all" (every name in `all`). Throws
// InvalidArgument naming --algo and the bad name.
std::vector<Algorithm> parse_algorithms(const std::string& text, std::span<const Algorithm> all);
// The names of `algos` joined by `sep`, for --help: "ring|bidir_ring|...".
std::string algorithm_names(std::span<const Algorithm> algos, const char* sep = "|");

}  // namespace toroid::cli
