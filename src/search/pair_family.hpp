// The per-layer search's seed (src/search/layer_dp.cpp): what every plan of a stage shares, and
// a good fitting plan found fast, whose time bounds the exact search.
#pragma once
#include <algorithm>
#include <cstddef>

#include "remat/search/completion_bound.hpp"
#include "remat/search/search_space.hpp"

namespace remat {

// What every plan of the stage shares: forward and backward time, the
// windows offload copies hide in, the host link rate.
// floor_s: forward + backward of every layer, head, p2p (StageTimeShape).
struct Fixed : StageTimeShape {
  // A lower bound on the final microbatch time of a partial plan: recompute
  // and offload only grow as layers are added, and the time never falls
  // when either grows.
  double lower_bound(double rc, double off) const {
    const double c = off / copy_bytes_per_s;
    return floor_s + rc + std::max(0.0, c - fwd_window_s) + std::max(0.0, c - bwd_window_s - rc);
  }
};

Fixed fixed_part(const SearchSpace& space, size_t stage);

// The fastest fitting plan of the family: the first a layers of the last layer's kind take
// option A, the next b option B, the rest keep (the other kinds keep), over all pairs and
// counts; infinity where none fits.
double pair_family_bound(const SearchSpace& space, size_t stage, const Fixed& fx, double budget);

}  // namespace remat
