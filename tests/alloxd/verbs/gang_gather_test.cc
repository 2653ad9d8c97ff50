// alloxd/verbs/gang_gather.h: a gang's binds meet; all arrive → one bind_all for all of them,
// each member its own outcome; one missing → every waiting member an error and none bound.
#include "alloxd/verbs/gang_gather.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace allox::extender {
namespace {

GangGather::Member member(int i) {
  GangGather::Member m;
  m.pod = "lab/big-" + std::to_string(i);
  m.args.pod_name = "big-" + std::to_string(i);
  m.args.pod_namespace = "lab";
  m.args.node = "node-" + std::to_string(i);
  return m;
}

TEST(GangGatherTest, WhenAllArriveTheLastBindsThemAllAtOnce) {
  GangGather gather;
  std::atomic<int> calls{0};
  std::vector<std::string> bound;
  auto bind_all = [&](const std::vector<GangGather::Member>& members) {
    ++calls;
    GangGather::Outcomes out;
    for (const auto& m : members) {
      bound.push_back(m.pod);
      out[m.pod] = "";
    }
    return out;
  };
  std::vector<std::string> outcomes(4, "unset");
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      outcomes[i] = gather.arrive("lab/big", member(i), 4, std::chrono::seconds(30), bind_all);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(1, calls.load()) << "one bind of the whole gang";
  EXPECT_EQ(4u, bound.size());
  for (const std::string& outcome : outcomes) EXPECT_EQ("", outcome);
  EXPECT_EQ(0u, gather.waiting());
}

TEST(GangGatherTest, AMemberMissingAtTheDeadlineFailsEveryWaitingMemberAndBindsNone) {
  GangGather gather;
  std::atomic<int> calls{0};
  auto bind_all = [&](const std::vector<GangGather::Member>&) {
    ++calls;
    return GangGather::Outcomes{};
  };
  std::vector<std::string> outcomes(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      outcomes[i] =
          gather.arrive("lab/big", member(i), 4, std::chrono::milliseconds(1000), bind_all);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(0, calls.load()) << "none bound";
  for (const std::string& outcome : outcomes) {
    EXPECT_NE(std::string::npos, outcome.find("3 of 4 members reached /bind")) << outcome;
    EXPECT_NE(std::string::npos, outcome.find("none was bound")) << outcome;
  }
  // The fourth arriving late starts a gathering of its own: the others are tried again.
  std::string late =
      gather.arrive("lab/big", member(3), 4, std::chrono::milliseconds(50), bind_all);
  EXPECT_NE(std::string::npos, late.find("1 of 4")) << late;
  EXPECT_EQ(0, calls.load());
}

TEST(GangGatherTest, EachMemberGetsItsOwnOutcome) {
  GangGather gather;
  auto bind_all = [&](const std::vector<GangGather::Member>& members) {
    GangGather::Outcomes out;
    for (const auto& m : members) out[m.pod] = m.pod == "lab/big-1" ? "refused" : "";
    return out;
  };
  std::vector<std::string> outcomes(2);
  std::thread other([&] {
    outcomes[0] = gather.arrive("lab/big", member(0), 2, std::chrono::seconds(30), bind_all);
  });
  outcomes[1] = gather.arrive("lab/big", member(1), 2, std::chrono::seconds(30), bind_all);
  other.join();
  EXPECT_EQ("", outcomes[0]);
  EXPECT_EQ("refused", outcomes[1]);
}

}  // namespace
}  // namespace allox::extender
