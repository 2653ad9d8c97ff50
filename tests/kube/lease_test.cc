// kube/lease.h: two replicas over one Lease held by a scripted API server that keeps
// the object with resourceVersion checks, driven by a fake clock.
#include "kube/lease.h"

#include <gtest/gtest.h>

#include "core/time_text.h"
#include "tests/kube/scripted_server.h"

namespace allox::kube {
namespace {

using nlohmann::json;
using testing::ScriptedApi;
using testing::ScriptedReply;
using testing::ScriptedRequest;
using namespace std::chrono_literals;

// GET / POST / PUT of one Lease, with optimistic concurrency on metadata.resourceVersion.
struct LeaseStore {
  std::mutex mu;
  std::optional<json> lease;
  int version = 0;
  bool down = false;

  ScriptedReply handle(const ScriptedRequest& r) {
    std::lock_guard lock(mu);
    if (down) return {503, "{}", nullptr};
    const std::string item = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/allox";
    if (r.method == "GET" && r.target == item) {
      if (!lease) return {404, R"({"kind":"Status","code":404})", nullptr};
      return {200, lease->dump(), nullptr};
    }
    json body = json::parse(r.body, nullptr, false);
    if (r.method == "POST") {
      if (lease) return {409, "{}", nullptr};
      body["metadata"]["resourceVersion"] = std::to_string(++version);
      lease = body;
      return {201, lease->dump(), nullptr};
    }
    if (r.method == "PUT" && r.target == item) {
      if (!lease) return {404, "{}", nullptr};
      if (body["metadata"].value("resourceVersion", "") !=
          (*lease)["metadata"]["resourceVersion"]) {
        return {409, R"({"kind":"Status","code":409,"reason":"Conflict"})", nullptr};
      }
      body["metadata"]["resourceVersion"] = std::to_string(++version);
      lease = body;
      return {200, lease->dump(), nullptr};
    }
    return {400, "{}", nullptr};
  }
  std::string holder() {
    std::lock_guard lock(mu);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "";
  }
};

LeaseOptions options_for(const std::string& identity) {
  LeaseOptions options;
  options.name = "allox";
  options.identity = identity;
  options.duration = 15s;
  return options;
}

TEST(LeaderLeaseTest, OneLeadsTheOtherTakesOverOnlyAfterRenewalsStop) {
  LeaseStore store;
  ScriptedApi api([&](const ScriptedRequest& r) { return store.handle(r); });
  std::vector<std::string> changes;
  LeaderLease a(api.client, options_for("a"), [&](bool l) { changes.push_back(l ? "a+" : "a-"); });
  LeaderLease b(api.client, options_for("b"), [&](bool l) { changes.push_back(l ? "b+" : "b-"); });
  LeaderLease::Clock::time_point t0{};

  EXPECT_TRUE(a.step(t0));  // creates the Lease
  EXPECT_FALSE(b.step(t0));
  EXPECT_EQ("a", store.holder());
  // a renews every few seconds: b never takes over, however long it waits.
  for (int s = 5; s <= 60; s += 5) {
    EXPECT_TRUE(a.step(t0 + std::chrono::seconds(s)));
    EXPECT_FALSE(b.step(t0 + std::chrono::seconds(s) + 1s)) << s;
  }
  // a stops renewing: b waits a full lease duration from when it last saw a change.
  EXPECT_FALSE(b.step(t0 + 70s));
  EXPECT_FALSE(b.step(t0 + 75s));
  EXPECT_TRUE(b.step(t0 + 77s));
  EXPECT_EQ("b", store.holder());
  EXPECT_EQ(1, (*store.lease)["spec"]["leaseTransitions"].get<int>());
  // a comes back: its renewal conflicts or finds b's record, and it steps down.
  EXPECT_FALSE(a.step(t0 + 78s));
  EXPECT_FALSE(a.leading());
  EXPECT_EQ((std::vector<std::string>{"a+", "b+", "a-"}), changes);
}

TEST(LeaderLeaseTest, ReleaseLetsTheOtherReplicaTakeOverAtOnce) {
  LeaseStore store;
  ScriptedApi api([&](const ScriptedRequest& r) { return store.handle(r); });
  LeaderLease a(api.client, options_for("a"), nullptr);
  LeaderLease b(api.client, options_for("b"), nullptr);
  LeaderLease::Clock::time_point t0{};
  ASSERT_TRUE(a.step(t0));
  ASSERT_FALSE(b.step(t0));
  a.release();
  EXPECT_FALSE(a.leading());
  EXPECT_EQ("", store.holder());
  EXPECT_TRUE(b.step(t0 + 1s));
}

TEST(LeaderLeaseTest, LeaderStepsDownWhenItCannotRenewForALeaseDuration) {
  LeaseStore store;
  ScriptedApi api([&](const ScriptedRequest& r) { return store.handle(r); });
  LeaderLease a(api.client, options_for("a"), nullptr);
  LeaderLease::Clock::time_point t0{};
  ASSERT_TRUE(a.step(t0));
  store.down = true;
  EXPECT_TRUE(a.step(t0 + 5s));  // still within its lease
  EXPECT_TRUE(a.step(t0 + 10s));
  EXPECT_FALSE(a.step(t0 + 15s));  // a successor may hold it by now: stop acting
}

TEST(LeaderLeaseTest, MicroTimeIsRfc3339WithMicroseconds) {
  std::chrono::system_clock::time_point at{std::chrono::microseconds(1795381800123456)};
  EXPECT_EQ("2026-11-22T21:10:00.123456Z", rfc3339_micro(at));
}

}  // namespace
}  // namespace allox::kube
