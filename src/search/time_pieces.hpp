#pragma once
// The stage's time over its floor (stage_totals) as the largest of four linear pieces of the
// recompute seconds rc and the offload copy seconds c, shared by the completion bound and the
// counts search's lower bound.
#include <array>

namespace remat::pieces {

// One piece: a x rc + b x c less wf x the forward window and wb x the backward window.
struct TimePiece {
  double a, b, wf, wb;
};
constexpr std::array<TimePiece, 4> kPieces = {{{1, 0, 0, 0}, {1, 1, 1, 0}, {0, 1, 0, 1}, {0, 2, 1, 1}}};

// The weight theta of p in the mix theta p + (1 - theta) q whose direction is rc + lambda x c,
// given dp = p.b - lambda p.a and dq likewise: theta dp + (1 - theta) dq = 0. -1 when no mix in
// [0, 1] has that direction.
inline double mix_weight(double dp, double dq) {
  if (dp == 0 && dq == 0) return 1;
  if (dp == dq) return -1;
  return dq / (dq - dp);
}

}  // namespace remat::pieces
