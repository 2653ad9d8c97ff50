#include "matcher/level_hull.h"

namespace allox::matcher {

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
  }
  points_.push_back({level, price, slot});
}

LevelHull::Cheapest LevelHull::cheapest(std::int64_t time) const {
  // Along the hull the slopes only rise, so the cost time·k + π falls, may stay level, then rises:
  // the first point whose successor is not cheaper is the first minimum.
  std::size_t lo = 0, hi = points_.size() - 1;  // the first minimum lies in [lo, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const Point& a = points_[mid];
    const Point& b = points_[mid + 1];
    const __int128 step = static_cast<__int128>(time) * (b.level - a.level) +
                          (static_cast<__int128>(b.price) - a.price);
    if (step >= 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const Point& p = points_[lo];
  return {p.slot, time * p.level + p.price};
}

}  // namespace allox::matcher
