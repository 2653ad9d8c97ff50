// LevelHull against a scan of every slot: the same minimum and the same (first) slot, on random
// prices drawn from small ranges so that ties, collinear points and flat stretches are common,
// and on prices and times near the int64 bounds the transport solver allows.
#include "matcher/level_hull.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace allox::matcher {
namespace {

struct Slot {
  std::int64_t level;
  std::int64_t price;
};

// What the transport solver did before the hull: the first slot of least time·level + price.
LevelHull::Cheapest scan(const std::vector<Slot>& slots, std::int64_t time) {
  LevelHull::Cheapest best{0, slots[0].level * time + slots[0].price};
  for (std::size_t s = 1; s < slots.size(); ++s) {
    const std::int64_t cost = slots[s].level * time + slots[s].price;
    if (cost < best.cost) best = {s, cost};
  }
  return best;
}

LevelHull hull_of(const std::vector<Slot>& slots) {
  LevelHull hull;
  for (std::size_t s = 0; s < slots.size(); ++s) hull.add(slots[s].level, slots[s].price, s);
  return hull;
}

TEST(LevelHull, MatchesAScanOnRandomPricesWithManyTies) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4000; ++round) {
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    const std::int64_t spread = std::uniform_int_distribution<std::int64_t>(0, 6)(rng);
    std::vector<Slot> slots;
    std::int64_t level = std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
    for (int i = 0; i < n; ++i) {
      // Prices falling roughly linearly with the level (as slot prices do) plus small noise:
      // many points collinear or tied.
      const std::int64_t noise = std::uniform_int_distribution<std::int64_t>(-spread, spread)(rng);
      slots.push_back({level, 100 - 5 * level + noise});
      level += std::uniform_int_distribution<std::int64_t>(1, 2)(rng);
    }
    const LevelHull hull = hull_of(slots);
    for (std::int64_t time = 0; time <= 12; ++time) {
      const LevelHull::Cheapest want = scan(slots, time);
      const LevelHull::Cheapest got = hull.cheapest(time);
      ASSERT_EQ(want.slot, got.slot) << "round " << round << " time " << time;
      ASSERT_EQ(want.cost, got.cost) << "round " << round << " time " << time;
    }
  }
}

TEST(LevelHull, AllEqualCostsGiveTheFirstSlot) {
  // Cost 3·k + (30 − 3·k) = 30 everywhere: every slot ties.
  std::vector<Slot> slots;
  for (std::int64_t k = 1; k <= 8; ++k) slots.push_back({k, 30 - 3 * k});
  EXPECT_EQ(hull_of(slots).cheapest(3).slot, 0u);
  EXPECT_EQ(hull_of(slots).cheapest(2).slot, 7u);  // prices fall faster than time·k rises
  EXPECT_EQ(hull_of(slots).cheapest(4).slot, 0u);
}

TEST(LevelHull, OneSlot) {
  const LevelHull hull = hull_of({{5, -7}});
  EXPECT_EQ(hull.cheapest(0).slot, 0u);
  EXPECT_EQ(hull.cheapest(1000).cost, 4993);
}

TEST(LevelHull, HugePricesAndTimesDoNotOverflow) {
  // Prices near ±2^61 and costs near 2^60, the transport solver's bounds: the hull's cross
  // products exceed int64 and must not wrap.
  std::mt19937_64 rng(11);
  const std::int64_t big = std::int64_t{1} << 61;
  for (int round = 0; round < 500; ++round) {
    std::vector<Slot> slots;
    const int n = std::uniform_int_distribution<int>(2, 40)(rng);
    for (int k = 1; k <= n; ++k) {
      slots.push_back({k, std::uniform_int_distribution<std::int64_t>(-big, big)(rng)});
    }
    const LevelHull hull = hull_of(slots);
    const std::int64_t time =
        std::uniform_int_distribution<std::int64_t>(0, (std::int64_t{1} << 60) / n)(rng);
    const LevelHull::Cheapest want = scan(slots, time);
    const LevelHull::Cheapest got = hull.cheapest(time);
    ASSERT_EQ(want.slot, got.slot) << "round " << round;
    ASSERT_EQ(want.cost, got.cost) << "round " << round;
  }
}

}  // namespace
}  // namespace allox::matcher
