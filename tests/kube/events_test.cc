// kube/events.h: one Event object per (pod, reason), repeats folded into its count,
// and a token bucket over all writes; with a fake clock.
#include "kube/events.h"

#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "tests/kube/scripted_server.h"

namespace allox::kube {
namespace {

using nlohmann::json;
using testing::ScriptedApi;
using testing::ScriptedReply;
using testing::ScriptedRequest;
using namespace std::chrono_literals;

// An API server that takes every Event as sent.
struct Fixture : ScriptedApi {
  Fixture()
      : ScriptedApi([](const ScriptedRequest& r) {
          return ScriptedReply{r.method == "POST" ? 201 : 200, r.body, nullptr};
        }) {}
  EventRecorder::Clock::time_point now{};
  EventOptions options;
  ObjectRef pod{"lab", "bert-gpu", "uid-1"};
};

TEST(EventRecorderTest, SameReasonOnThePodUpdatesOneObject) {
  Fixture f;
  EventRecorder events(f.client, f.options, [&] { return f.now; });
  using O = EventRecorder::Outcome;
  EXPECT_EQ(O::kCreated, *events.record(f.pod, "Normal", "Queued", "position 3 of 12"));
  EXPECT_EQ(O::kUnchanged, *events.record(f.pod, "Normal", "Queued", "position 3 of 12"));
  f.now += 1s;
  EXPECT_EQ(O::kUpdated, *events.record(f.pod, "Normal", "Queued", "position 2 of 12"));
  f.now += 301s;  // the same words again after repeat_after: counted once more
  EXPECT_EQ(O::kUpdated, *events.record(f.pod, "Normal", "Queued", "position 2 of 12"));
  EXPECT_EQ(O::kCreated, *events.record(f.pod, "Normal", "Admitted", "starts on node-a (gpu)"));

  auto requests = f.server.requests();
  ASSERT_EQ(4u, requests.size());
  json created = json::parse(requests[0].body);
  EXPECT_EQ("/api/v1/namespaces/lab/events", requests[0].target);
  EXPECT_EQ("Pod", created["involvedObject"]["kind"]);
  EXPECT_EQ("bert-gpu", created["involvedObject"]["name"]);
  EXPECT_EQ("uid-1", created["involvedObject"]["uid"]);
  EXPECT_EQ("Queued", created["reason"]);
  EXPECT_EQ(1, created["count"]);
  const std::string name = created["metadata"]["name"];
  EXPECT_EQ(0u, name.rfind("bert-gpu.", 0)) << name;
  EXPECT_EQ("PATCH", requests[1].method);
  EXPECT_EQ("/api/v1/namespaces/lab/events/" + name, requests[1].target);
  EXPECT_EQ("application/merge-patch+json", requests[1].content_type);
  json patch = json::parse(requests[1].body);
  EXPECT_EQ(2, patch["count"]);
  EXPECT_EQ("position 2 of 12", patch["message"]);
  EXPECT_EQ(3, json::parse(requests[2].body)["count"]);
  EXPECT_EQ("POST", requests[3].method);
}

TEST(EventRecorderTest, WritesBeyondTheBudgetAreDroppedAndCounted) {
  Fixture f;
  f.options.qps = 1;
  f.options.burst = 5;
  EventRecorder events(f.client, f.options, [&] { return f.now; });
  int written = 0;
  for (int i = 0; i < 20; ++i) {
    ObjectRef pod{"lab", "p" + std::to_string(i), ""};
    if (*events.record(pod, "Normal", "Queued", "x") == EventRecorder::Outcome::kCreated) ++written;
  }
  EXPECT_EQ(5, written);
  EXPECT_EQ(15u, events.dropped());
  f.now += 2s;  // two tokens back
  written = 0;
  for (int i = 0; i < 5; ++i) {
    ObjectRef pod{"lab", "q" + std::to_string(i), ""};
    if (*events.record(pod, "Normal", "Queued", "x") == EventRecorder::Outcome::kCreated) ++written;
  }
  EXPECT_EQ(2, written);
  EXPECT_EQ(7u, f.server.requests().size());
}

// One namespace creating pods as fast as it can, another with one new pod a second, for a
// minute at the default budget (20 qps, burst 100): the quiet namespace's every event is
// written, the flooding one gets the rest, and the total stays within the budget.
TEST(EventRecorderTest, AFloodingNamespaceLeavesAnothersEventsFlowing) {
  Fixture f;
  EventRecorder events(f.client, f.options, [&] { return f.now; });
  using O = EventRecorder::Outcome;
  int flood_written = 0, quiet_written = 0, quiet_asked = 0, pod = 0;
  for (int tick = 0; tick < 1200; ++tick) {  // 60 s in steps of 50 ms
    for (int i = 0; i < 50; ++i) {           // 1,000 new pods a second
      ObjectRef flooder{"a-flood", "p" + std::to_string(pod++), ""};
      if (*events.record(flooder, "Normal", "Queued", "position 9999") == O::kCreated) {
        ++flood_written;
      }
    }
    if (tick % 20 == 0) {
      ++quiet_asked;
      ObjectRef quiet{"b-quiet", "q" + std::to_string(tick), ""};
      if (*events.record(quiet, "Normal", "Queued", "position 1") == O::kCreated) ++quiet_written;
    }
    f.now += std::chrono::milliseconds(50);
  }
  EXPECT_EQ(quiet_asked, quiet_written);
  EXPECT_GE(flood_written, 60 * 10);             // at least its half of 20 qps
  EXPECT_LE(flood_written + quiet_written, 60 * 20 + 100);  // the budget: qps for 60 s + burst
}

// Two namespaces flooding at once split the budget evenly: neither can take the other's half.
TEST(EventRecorderTest, TwoFloodingNamespacesSplitTheBudget) {
  Fixture f;
  EventRecorder events(f.client, f.options, [&] { return f.now; });
  using O = EventRecorder::Outcome;
  std::map<std::string, int> written;
  int pod = 0;
  for (int tick = 0; tick < 3000; ++tick) {  // 30 s in steps of 10 ms, each asking 100 a second
    for (const char* name : {"a-flood", "b-flood"}) {
      ObjectRef flooder{name, "p" + std::to_string(pod++), ""};
      if (*events.record(flooder, "Normal", "Queued", "x") == O::kCreated) ++written[name];
    }
    f.now += std::chrono::milliseconds(10);
  }
  // Each: its 10 qps for 30 s; the first may also have had the spare half of the first burst.
  EXPECT_GE(written["a-flood"], 290);
  EXPECT_GE(written["b-flood"], 290);
  EXPECT_LE(written["a-flood"] + written["b-flood"], 30 * 20 + 100);
}

TEST(EventRecorderTest, ForgetStartsAFreshSeries) {
  Fixture f;
  EventRecorder events(f.client, f.options, [&] { return f.now; });
  ASSERT_EQ(EventRecorder::Outcome::kCreated, *events.record(f.pod, "Normal", "Queued", "x"));
  events.forget(f.pod);
  EXPECT_EQ(EventRecorder::Outcome::kCreated, *events.record(f.pod, "Normal", "Queued", "x"));
}

}  // namespace
}  // namespace allox::kube
