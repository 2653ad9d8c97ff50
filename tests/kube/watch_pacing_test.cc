// kube/watch_pacing.h: a misbehaving API server, played for minutes of a fake clock,
// gets a LIST or WATCH at the pace of the back-off cap, not a loop.
#include "kube/watch_pacing.h"

#include <gtest/gtest.h>

#include <vector>

namespace allox::kube {
namespace {

using namespace std::chrono_literals;
using Clock = WatchPacing::Clock;
using End = WatchPacing::WatchEnd;

// What an informer does against a server whose every watch lasts `watch_lasts` and ends as
// `end`, for `span` of the fake clock: the times of its LISTs and WATCHes.
struct Played {
  std::vector<Clock::duration> lists, watches;
  int in(const std::vector<Clock::duration>& times, Clock::duration from) const {
    int n = 0;
    for (auto t : times) n += t >= from ? 1 : 0;
    return n;
  }
};

Played play(End end, Clock::duration watch_lasts, Clock::duration span,
            WatchPacingOptions options = {}) {
  WatchPacing pacing(options);
  const Clock::time_point start{};
  Clock::time_point now = start;
  Played played;
  bool need_list = true;
  while (now - start < span) {
    if (need_list) {
      if (auto wait = pacing.before_list(now); wait > 0ms) {
        now += wait;
        continue;
      }
      played.lists.push_back(now - start);
      now += 5ms;  // the LIST's round trip: it succeeds
      need_list = false;
    }
    played.watches.push_back(now - start);
    const auto opened = now;
    now += watch_lasts;
    now += pacing.watch_ended(end, opened, now);
    need_list = end != End::kClean;
  }
  return played;
}

TEST(WatchPacingTest, A410OnEveryWatchGetsUnderOneListASecondAfterTheFirstMinute) {
  const Played played = play(End::kGone, 2ms, 10min);
  const int after_first_minute = played.in(played.lists, 1min);
  EXPECT_LT(after_first_minute, 9 * 60);  // under 1 a second, by far:
  // the back-off's cap (30 s, jittered down by at most a fifth) between any two.
  EXPECT_LE(after_first_minute, static_cast<int>(9min / 24s) + 1);
  EXPECT_LE(played.in(played.watches, 1min), after_first_minute);
}

TEST(WatchPacingTest, WatchesEndingAtOnceAreReopenedAtTheBackOffsPaceWithoutAList) {
  const Played played = play(End::kClean, 0ms, 10min);
  EXPECT_EQ(1u, played.lists.size());
  EXPECT_LE(played.in(played.watches, 1min), static_cast<int>(9min / 24s) + 1);
}

TEST(WatchPacingTest, FailingWatchesAreBackedOffLikeGoneOnes) {
  const Played played = play(End::kFailed, 50ms, 10min);
  EXPECT_LE(played.in(played.lists, 1min), static_cast<int>(9min / 24s) + 1);
}

// A watch that stays open is the server working: its clean end is re-watched at once, and it
// resets the back-off that failures had grown.
TEST(WatchPacingTest, AHealthyWatchResetsTheBackOffAndItsCleanEndIsReopenedAtOnce) {
  WatchPacing pacing({});
  Clock::time_point now{};
  for (int i = 0; i < 10; ++i) now += pacing.watch_ended(End::kGone, now, now + 1ms) + 1ms;
  EXPECT_EQ(10, pacing.failures_in_a_row());
  EXPECT_EQ(0ms, pacing.watch_ended(End::kClean, now, now + 5min));  // its timeout
  EXPECT_EQ(0, pacing.failures_in_a_row());
  now += 5min;
  // The next early failure starts from the initial delay again.
  EXPECT_LE(pacing.watch_ended(End::kFailed, now, now + 1ms), 200ms);
}

TEST(WatchPacingTest, ListsKeepTheMinimumIntervalWhateverAsks) {
  WatchPacingOptions options;
  options.min_relist_interval = 1s;
  WatchPacing pacing(options);
  const Clock::time_point t0{};
  EXPECT_EQ(0ms, pacing.before_list(t0));
  EXPECT_EQ(1000ms, pacing.before_list(t0));
  EXPECT_EQ(700ms, pacing.before_list(t0 + 300ms));
  EXPECT_EQ(1ms, pacing.before_list(t0 + 999500us));  // rounded up, never a hair early
  EXPECT_EQ(0ms, pacing.before_list(t0 + 1s));
}

// A short watch timeout (tests, or an operator's) still counts a watch that ran for half of
// it as healthy.
TEST(WatchPacingTest, AWatchThatRanHalfItsTimeoutIsHealthy) {
  WatchPacingOptions options;
  options.watch_timeout = 4s;
  WatchPacing pacing(options);
  const Clock::time_point t0{};
  EXPECT_GT(pacing.watch_ended(End::kClean, t0, t0 + 1s), 0ms);
  EXPECT_EQ(0ms, pacing.watch_ended(End::kClean, t0, t0 + 2s));
}

}  // namespace
}  // namespace allox::kube
