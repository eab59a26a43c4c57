#include "measure/cli.hpp"

#include <sstream>

#include "toroid/error.hpp"

namespace po = boost::program_options;

namespace toroid::cli {

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

po::variables_map parse_command_line(const po::options_description& d, int argc, char** argv,
                                     bool& help, std::string& help_text) {
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, d), vm);
    po::notify(vm);
  } catch (const po::error& ex) {
    throw InvalidArgument(ex.what());
  }
  std::ostringstream h;
  h << d;
  help_text = h.str();
  help = vm.count("help") > 0;
  return vm;
}

std::vector<Collective> parse_collectives(const std::string& text) {
  // "all": the reductions and broadcast; alltoall by name (its sweeps are of another kind).
  const std::vector<Collective> every = {Collective::allreduce, Collective::reduce_scatter,
                                         Collective::allgather, Collective::broadcast};
  if (text == "all") return every;
  std::vector<Collective> out;
  for (const std::string& name : split_list(text)) {
    bool known = false;
    for (Collective c : all_collectives)
      if (name == to_string(c)) out.push_back(c), known = true;
    if (!known)
      throw InvalidArgument(
          "--op: unknown collective '" + name +
          "' (valid: allreduce, reduce_scatter, allgather, broadcast, alltoall, all)");
  }
  if (out.empty()) throw InvalidArgument("--op: names no collective");
  return out;
}

std::vector<Algorithm> parse_algorithms(const std::string& text, std::span<const Algorithm> all) {
  if (text == "all") return {all.begin(), all.end()};
  std::vector<Algorithm> out;
  for (const std::string& name : split_list(text)) {
    try {
      out.push_back(parse_algorithm(name));
    } catch (const InvalidArgument& ex) {
      throw InvalidArgument(std::string("--algo: ") + ex.what());
    }
  }
  if (out.empty()) throw InvalidArgument("--algo: names no algorithm");
  return out;
}

std::string algorithm_names(std::span<const Algorithm> algos, const char* sep) {
  std::string out;
  for (Algorithm a : algos) {
    if (!out.empty()) out += sep;
    out += to_string(a);
  }
  return out;
}

}  // namespace toroid::cli
