#include "matcher/level_hull.h"

#include <limits>

namespace allox::matcher {
namespace {

// The least integer time t with t·dl + dp >= 0 (dl > 0): ceil(−dp / dl), clamped to int64.
std::int64_t threshold(__int128 dl, __int128 dp) {
  const __int128 num = -dp;
  __int128 q = num / dl;
  if (q * dl < num) ++q;  // round toward +infinity (division truncates toward zero)
  constexpr __int128 kMax = std::numeric_limits<std::int64_t>::max();
  constexpr __int128 kMin = std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(q > kMax ? kMax : (q < kMin ? kMin : q));
}

}  // namespace

void LevelHull::clear() {
  points_.clear();
  threshold_.clear();
}

void LevelHull::add(std::int64_t level, std::int64_t price, std::size_t slot) {
  // Drops the last point while it lies strictly above the segment from the one before it to the
  // new point (a clockwise turn); a point on the segment stays.
  while (points_.size() >= 2) {
    const Point& o = points_[points_.size() - 2];
    const Point& a = points_.back();
    const __int128 turn = static_cast<__int128>(a.level - o.level) * (price - o.price) -
                          static_cast<__int128>(a.price - o.price) * (level - o.level);
    if (turn >= 0) break;
    points_.pop_back();
    threshold_.pop_back();
  }
  if (!points_.empty()) {
    const Point& a = points_.back();
    threshold_.push_back(
        threshold(static_cast<__int128>(level) - a.level, static_cast<__int128>(price) - a.price));
  }
  points_.push_back({level, price, slot});
}

LevelHull::Cheapest LevelHull::cheapest(std::int64_t time) const {
  // Along the hull the slopes only rise, so the cost time·k + π falls, may stay level, then rises:
  // the first point whose successor is not cheaper is the first minimum. Point k's successor is
  // not cheaper exactly when time >= threshold_[k], and the thresholds fall along the hull: a
  // binary search over them, without a multiplication per step.
  const std::int64_t* first = threshold_.data();
  std::size_t len = threshold_.size();
  while (len > 0) {
    const std::size_t half = len / 2;
    if (time < first[half]) {
      first += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  const Point& p = points_[static_cast<std::size_t>(first - threshold_.data())];
  return {p.slot, time * p.level + p.price};
}

}  // namespace allox::matcher
