// The cheapest level of one device type for a job, at given slot prices (internal; used by the
// transport solver, transport_flow.cc).
//
// Problem. The slots of one device type have levels k_1 < k_2 < ... and prices π_i; a job that
// takes p ticks on the type pays p·k_i + π_i in slot i. Its cheapest slot is the point of
// {(k_i, π_i)} a line of slope −p touches from below, so it lies on the lower convex hull of the
// points: after an O(n) build, each query is a binary search, O(log n), where a scan of every slot
// is O(n). The transport solver asks this for every job and type twice per solve.
//
// Guarantees. cheapest() returns exactly what a scan of every slot in order would return with a
// strict comparison: the minimum of p·k + π and, among slots that reach it, the first. Points on a
// hull edge are kept (not only the corners), so every slot that can tie for the minimum is there.
// Arithmetic on differences is 128-bit: any int64 prices and levels, and p·k and the sum p·k + π
// in int64 (the caller's bound; the transport solver's costs are below 2^60 and prices 2^61).
//
// Thread-safety: a built hull is immutable; queries may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace allox::matcher {

class LevelHull {
 public:
  struct Cheapest {
    std::size_t slot = 0;   // the `slot` given to add()
    std::int64_t cost = 0;  // time·level + price there
  };

  void clear();
  // Adds the next slot. Precondition: level above every level added since clear().
  void add(std::int64_t level, std::int64_t price, std::size_t slot);
  bool empty() const { return points_.empty(); }
  // Precondition: !empty().
  Cheapest cheapest(std::int64_t time) const;

 private:
  struct Point {
    std::int64_t level;
    std::int64_t price;
    std::size_t slot;
  };
  std::vector<Point> points_;  // the lower hull, levels ascending
  // threshold_[k]: the least time at which points_[k + 1] costs no less than points_[k]
  // (non-increasing in k); one fewer than the points.
  std::vector<std::int64_t> threshold_;
};

}  // namespace allox::matcher
