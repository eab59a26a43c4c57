// What `auto`'s cost model knows of the links: per link class a per-message time (alpha) and a
// bandwidth (1/beta), and the reduction kernel's throughput. Measured by toroid-tune, read from
// the file TOROID_TUNING names, else the defaults below (measured on this project's machine).
//
//   class    between                                      carried by
//   shm      two ranks of one node                        toroid's shared-memory links
//   mpi      two ranks of one node, TOROID_TRANSPORT=mpi  MPI (its own shared memory)
//   network  ranks of different nodes                     MPI (TCP, or what MPI has)
//
// File format (toroid-tune writes it; '#' starts a comment):
//   toroid-tuning 1
//   shm.alpha_us = 0.9
//   shm.gbps = 6.5            (1e9 bytes/s one way, per rank, all ranks of a node sending)
//   reduce.gbps = 9.0         (bytes of one operand summed per second)
//   network.links = torus     (optional; default switch: one port per node. torus: the nodes
//                              are wired as the communicator's torus, one rank per node, and
//                              the network.* parameters are per link and hop, as in toroid-sim)
//   choose 4 ranks, 4x1 ring, 1 node, shm = allreduce:0-48=mpi,48-3K=recursive_doubling,...
//                             (optional, any number: the algorithm toroid-tune measured fastest
//                              per size range on that layout, TOROID_ALGO's rule syntax; `auto`
//                              follows them on a communicator of exactly that layout, where
//                              the model alone cannot tell, and prices the rest)
// A class may be missing (measured on one node: no network.*); a communicator that needs it
// is then refused with a message saying so.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/algorithm_rules.hpp"

namespace toroid::model {

enum class LinkClass { shm, mpi, network };
inline constexpr int kLinkClasses = 3;
std::string_view to_string(LinkClass c) noexcept;

struct LinkParams {
  double alpha_s = 0;        // per message: from posting a send to the receiver having it, 0 bytes
  double bytes_per_s = 1e9;  // one way
};

// Measured choices for one layout: what `auto` runs there, per collective and size range.
struct MeasuredChoices {
  std::string layout;  // Selector::layout() of the communicator measured on
  std::vector<AlgorithmRule> rules;
};

struct Tuning {
  std::array<std::optional<LinkParams>, kLinkClasses> links;
  std::vector<MeasuredChoices> choices;  // at most one entry per layout
  double reduce_bytes_per_s = 8e9;
  bool network_torus = false;                // network.links = torus
  std::string source = "built-in defaults";  // the file's path, for messages

  // The measured rules for a communicator of this layout; null when none were measured.
  const std::vector<AlgorithmRule>* choices_for(std::string_view layout) const noexcept;

  const std::optional<LinkParams>& operator[](LinkClass c) const {
    return links[static_cast<int>(c)];
  }
  std::optional<LinkParams>& operator[](LinkClass c) { return links[static_cast<int>(c)]; }
};

// Measured on this project's 2-core VM with toroid-tune (docs/algorithms.md, section `auto`).
Tuning default_tuning();

// Parses a tuning file's text; throws InvalidArgument "<source>:<line>: ..." naming the bad part.
Tuning parse_tuning(std::string_view text, std::string_view source);
// The text parse_tuning reads back (header comment lines first, each prefixed with "# ").
std::string format_tuning(const Tuning& t, std::string_view header);

}  // namespace toroid::model
