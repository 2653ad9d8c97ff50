// The bodies a real kube-scheduler v1.28.7 sent (data/kube-extender/real-v1.28/, README there),
// replayed in order through alloxd's routes, byte for byte. Nothing here compares with a reply
// allox wrote: each answer is checked for properties the scheduler relies on, with expectations
// the test computes itself from what it has sent so far:
//   - /filter: kept nodes are offered ones and have a free machine of the pod's device, and a
//     kept pod's answer has no failed maps; a pod kept nowhere has every offered node failed,
//     exactly once; full Node objects come back when full objects were sent; a "queued"
//     reason names the position and the estimated start, and the start is when the first running
//     job of that device finishes by its time hint; a job has at most one admitted variant, and
//     once one is bound its siblings are refused on every node naming the pod and node;
//   - /prioritize: one score per offered node, in 0..10, positive only on a node /filter kept;
//   - /bind: the scheduler binds only where /filter kept the pod (it does, and succeeds); a bind
//     to a node without a free machine is refused;
//   - /preempt: a node whose victims include a running allox job is never offered back.
// Time is a fake clock set from each exchange's recorded time (or one second per exchange).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "fairness/policy.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;

const std::string kData = ALLOX_SOURCE_DIR "/data/kube-extender/real-v1.28/";

// The recorded cluster: node-a and node-b with 2 GPUs and 32 cores each (their allocatable in the
// nodeCacheCapable=false bodies), node-c with 32 cores (offered to the CPU variant only).
std::vector<NodeInventory> recorded_inventory() {
  return {{"node-a", {{"gpu", 2}, {"cpu", 1}}},
          {"node-b", {{"gpu", 2}, {"cpu", 1}}},
          {"node-c", {{"cpu", 1}}}};
}

// A completion the cluster saw between two recorded exchanges (README, scheduler-log-excerpts).
struct ClusterEvent {
  std::string before;  // exchange number, "010"
  std::string time;    // HH:MM:SS
  std::string job;     // namespace/name
};

struct Exchange {
  std::string number;  // "001"
  std::string verb;    // filter, prioritize, bind, preempt
  std::string body;
  std::optional<double> time;  // seconds of the day, from the .meta.json
};

double seconds_of_day(const std::string& hhmmss) {
  return std::stoi(hhmmss.substr(0, 2)) * 3600.0 + std::stoi(hhmmss.substr(3, 2)) * 60.0 +
         std::stoi(hhmmss.substr(6, 2));
}

std::vector<Exchange> exchanges(const std::string& folder) {
  std::vector<Exchange> out;
  for (const auto& entry : std::filesystem::directory_iterator(kData + folder)) {
    const std::string name = entry.path().filename().string();
    static const std::regex request(R"((\d{3})-([a-z]+)\.json)");
    std::smatch m;
    if (!std::regex_match(name, m, request)) continue;
    Exchange e{m[1], m[2], testing::read_text_file(entry.path().string()), std::nullopt};
    const auto meta = entry.path().parent_path() / (e.number + "-" + e.verb + ".meta.json");
    if (std::filesystem::exists(meta)) {
      json j = json::parse(testing::read_text_file(meta.string()));
      if (j.contains("time")) e.time = seconds_of_day(j["time"].get<std::string>());
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const Exchange& a, const Exchange& b) { return a.number < b.number; });
  return out;
}

std::vector<std::string> names_of(const json& node_list) {
  std::vector<std::string> names;
  if (node_list.is_object() && node_list["items"].is_array()) {
    for (const json& n : node_list["items"]) names.push_back(n["metadata"]["name"]);
  }
  return names;
}

// What the test knows from what it sent and what alloxd acknowledged.
struct Running {
  std::string job;
  std::string pod;  // namespace/name
  std::string node;
  DeviceType device;
  double start = 0;
  double hint = 0;  // allox.io/time.<device>
  std::string uid;
};

class Replay {
 public:
  Replay(const std::string& folder, std::vector<ClusterEvent> events)
      : folder_(folder), events_(std::move(events)) {
    auto config = testing::make_config(recorded_inventory(), dir_.file("alloxd.db"));
    config.policy = "allox";  // alloxd's default, as recorded
    config.devices.resources = {{"nvidia.com/gpu", "gpu"}};
    for (const NodeInventory& node : config.nodes) inventory_[node.name] = node.machines;
    auto policy = make_policy(config.policy, PolicyOptions{});
    EXPECT_TRUE(policy.ok()) << policy.message();
    ServiceOptions options;
    options.clock = [this] { return clock_.load(); };
    options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
    auto service = ExtenderService::create(config, std::move(*policy), nullptr, options);
    EXPECT_TRUE(service.ok()) << service.message();
    service_ = std::move(*service);
    service_->start();
    service_->solve_now();
  }

  void run() {
    double next = 1000;
    for (const Exchange& e : exchanges(folder_)) {
      SCOPED_TRACE(folder_ + "/" + e.number + "-" + e.verb);
      for (const ClusterEvent& event : events_) {
        if (event.before == e.number) complete(event);
      }
      clock_ = e.time.value_or(next);
      next = clock_ + 1;
      service_->solve_now();  // the plan of the book as it stands, as a round would publish
      if (e.verb == "filter") filter(e);
      if (e.verb == "prioritize") prioritize(e);
      if (e.verb == "bind") bind(e);
      if (e.verb == "preempt") preempt(e);
      ++replayed_[e.verb];
    }
  }

  std::map<std::string, int> replayed_;
  int queued_answers_ = 0;
  int binds_ = 0;
  int refused_binds_ = 0;
  int sibling_refusals_ = 0;

 private:
  json post(const std::string& verb, const std::string& body) {
    HttpReply reply = route(*service_, {"POST", "/" + verb, "", body, ""});
    EXPECT_EQ(200, reply.status) << reply.body;
    return json::parse(reply.body);
  }

  static std::string job_of(const json& pod) {
    const json& meta = pod["metadata"];
    const std::string ns = meta.value("namespace", "default");
    if (meta.contains("annotations") && meta["annotations"].contains("allox.io/job")) {
      std::string job = meta["annotations"]["allox.io/job"];
      return job.find('/') == std::string::npos ? ns + "/" + job : job;
    }
    return ns + "/" + meta["name"].get<std::string>();
  }
  static DeviceType device_of(const json& pod) {
    for (const json& c : pod["spec"]["containers"]) {
      if (c["resources"].contains("requests") &&
          c["resources"]["requests"].contains("nvidia.com/gpu")) {
        return "gpu";
      }
    }
    return "cpu";
  }
  static std::string pod_of(const json& pod) {
    return pod["metadata"].value("namespace", "default") + "/" +
           pod["metadata"]["name"].get<std::string>();
  }

  int free_machines(const std::string& node, const DeviceType& device) const {
    auto n = inventory_.find(node);
    if (n == inventory_.end() || !n->second.contains(device)) return 0;
    int used = 0;
    for (const auto& [job, r] : running_) used += r.node == node && r.device == device;
    return n->second.at(device) - used;
  }

  void complete(const ClusterEvent& event) {
    clock_ = seconds_of_day(event.time);
    ASSERT_TRUE(service_->complete(event.job).ok()) << event.job;
    ASSERT_EQ(1u, running_.erase(event.job)) << event.job << " was not running";
    finished_.insert(event.job);
  }

  void filter(const Exchange& e) {
    const json request = json::parse(e.body);
    const json& pod = request["Pod"];
    const bool full_nodes = !request["Nodes"].is_null();
    const std::vector<std::string> offered =
        full_nodes ? names_of(request["Nodes"])
                   : request["NodeNames"].get<std::vector<std::string>>();
    const json reply = post("filter", e.body);
    ASSERT_EQ("", reply["Error"]) << reply.dump();

    // Kept nodes are offered ones, each once. A pod kept somewhere gets no reasons (the
    // scheduler reads them only when no node is left); a pod kept nowhere gets one for every
    // offered node, exactly once, and nothing else is answered.
    std::vector<std::string> kept = reply["NodeNames"].get<std::vector<std::string>>();
    if (full_nodes) {
      EXPECT_EQ(kept, names_of(reply["Nodes"])) << "full objects answer full objects";
    } else {
      EXPECT_TRUE(reply["Nodes"].is_null());
    }
    std::map<std::string, int> answered;
    for (const std::string& n : kept) {
      ++answered[n];
      EXPECT_NE(offered.end(), std::find(offered.begin(), offered.end(), n)) << n;
    }
    std::map<std::string, std::string> reasons;
    for (const char* field : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
      if (!kept.empty()) {
        EXPECT_TRUE(reply[field].is_null()) << field << " of a kept pod: " << reply.dump();
      }
      if (reply[field].is_null()) continue;
      for (const auto& [node, why] : reply[field].items()) {
        ++answered[node];
        reasons[node] = why;
        EXPECT_FALSE(why.get<std::string>().empty()) << node;
      }
    }
    for (const auto& [node, times] : answered) EXPECT_EQ(1, times) << node << ": " << reply.dump();
    if (kept.empty()) {
      std::map<std::string, int> want;
      for (const std::string& n : offered) want[n] = 1;
      EXPECT_EQ(want, answered) << reply.dump();
    }

    const std::string job = job_of(pod);
    const DeviceType device = device_of(pod);
    for (const std::string& n : kept) {
      EXPECT_GT(free_machines(n, device), 0) << n << " kept without a free " << device;
    }

    // At most one admitted variant per job; a bound job's siblings are refused everywhere.
    if (!kept.empty()) {
      admitted_variant_.try_emplace(job, pod_of(pod));
      EXPECT_EQ(admitted_variant_[job], pod_of(pod))
          << "a second variant of " << job << " admitted";
    }
    if (auto r = running_.find(job); r != running_.end()) {
      EXPECT_TRUE(kept.empty());
      for (const std::string& n : offered) {
        if (!inventory_[n].contains(device)) continue;  // "no capacity" is said first there
        const std::string why = reply["FailedAndUnresolvableNodes"].value(n, std::string());
        EXPECT_NE(std::string::npos, why.find("pod " + r->second.pod + " on " + r->second.node))
            << n << ": " << why;
      }
      ++sibling_refusals_;
    }

    // A queued pod is told where it stands and when it starts: position p of n, and the first
    // finish of a running job of its device by that job's own time hint.
    static const std::regex queued(R"(queued: position (\d+) of (\d+), est\. start in (\d+)s)");
    for (const auto& [node, why] : reasons) {
      if (why.rfind("queued", 0) != 0) continue;
      std::smatch m;
      ASSERT_TRUE(std::regex_match(why, m, queued)) << why;
      const int position = std::stoi(m[1]), length = std::stoi(m[2]);
      EXPECT_GE(position, 1);
      EXPECT_LE(position, length);
      if (position == 1) {
        double first_free = std::numeric_limits<double>::infinity();
        for (const auto& [id, r] : running_) {
          if (r.device == device) first_free = std::min(first_free, r.start + r.hint);
        }
        EXPECT_NEAR(first_free - clock_, std::stod(m[3]), 1.0) << why;
      }
      ++queued_answers_;
    }
    kept_[pod_of(pod)] = {kept.begin(), kept.end()};
    pods_[pod_of(pod)] = pod;
  }

  void prioritize(const Exchange& e) {
    const json request = json::parse(e.body);
    const bool full_nodes = !request["Nodes"].is_null();
    const std::vector<std::string> offered =
        full_nodes ? names_of(request["Nodes"])
                   : request["NodeNames"].get<std::vector<std::string>>();
    const json reply = post("prioritize", e.body);
    ASSERT_TRUE(reply.is_array()) << reply.dump();
    std::vector<std::string> scored;
    const std::set<std::string>& kept = kept_[pod_of(request["Pod"])];
    for (const json& p : reply) {
      scored.push_back(p["Host"]);
      const std::int64_t score = p["Score"];
      EXPECT_GE(score, 0);
      EXPECT_LE(score, kMaxExtenderPriority);
      if (score > 0) {
        EXPECT_TRUE(kept.contains(p["Host"])) << p.dump() << " was not kept";
      }
    }
    EXPECT_EQ(offered, scored);
  }

  void bind(const Exchange& e) {
    json request = json::parse(e.body);
    const std::string pod =
        request["PodNamespace"].get<std::string>() + "/" + request["PodName"].get<std::string>();
    const std::set<std::string>& kept = kept_[pod];
    const std::string recorded = request["Node"];
    if (kept.empty()) {
      // The scheduler binds only where the extender kept the pod; a bind anyway must not
      // overfill a node.
      if (free_machines(recorded, device_of(pods_[pod])) == 0) {
        EXPECT_NE("", post("bind", e.body)["Error"]) << "bind to a full " << recorded;
        ++refused_binds_;
      }
      return;
    }
    // The scheduler picks among the kept nodes; the recorded choice when it is one of them.
    const std::string node = kept.contains(recorded) ? recorded : *kept.begin();
    request["Node"] = node;
    const json reply = post("bind", request.dump());
    ASSERT_EQ("", reply["Error"]) << reply.dump();
    const json& p = pods_[pod];
    const DeviceType device = device_of(p);
    const std::string hint = p["metadata"]["annotations"].value("allox.io/time." + device, "0");
    running_[job_of(p)] = {job_of(p),
                           pod,
                           node,
                           device,
                           clock_,
                           std::stod(hint),
                           request["PodUID"].get<std::string>()};
    ++binds_;
    auto view = service_->job(job_of(p));
    ASSERT_TRUE(view.ok()) << view.message();
    EXPECT_EQ(JobPhase::kRunning, view->record.phase);
    EXPECT_EQ(node, view->record.node);
  }

  void preempt(const Exchange& e) {
    const json request = json::parse(e.body);
    std::set<std::string> protected_uids;
    for (const auto& [job, r] : running_) protected_uids.insert(r.uid);
    const json reply = post("preempt", e.body);
    const char* field =
        request["NodeNameToMetaVictims"].is_null() ? "NodeNameToVictims" : "NodeNameToMetaVictims";
    std::set<std::string> offered;
    if (!request[field].is_null()) {
      for (const auto& [node, victims] : request[field].items()) offered.insert(node);
    }
    const json& answer = reply["NodeNameToMetaVictims"];
    if (answer.is_null()) return;
    for (const auto& [node, victims] : answer.items()) {
      EXPECT_TRUE(offered.contains(node)) << node << " was not offered";
      for (const json& v : victims["Pods"]) {
        EXPECT_FALSE(protected_uids.contains(v["UID"])) << node << " would evict a running job";
      }
    }
  }

  testing::ScratchDir dir_;
  std::string folder_;
  std::vector<ClusterEvent> events_;
  std::atomic<double> clock_{1000};
  std::unique_ptr<ExtenderService> service_;
  std::map<std::string, std::map<DeviceType, int>> inventory_;
  std::map<std::string, Running> running_;  // by job
  std::set<std::string> finished_;
  std::map<std::string, std::string> admitted_variant_;  // job -> pod
  std::map<std::string, std::set<std::string>> kept_;    // pod -> nodes /filter kept
  std::map<std::string, json> pods_;                     // pod -> the object last filtered
};

// alloxd at nodeCacheCapable=true: five GPU jobs fill both nodes; g-dave queues behind g1 until
// g1 is seen to finish (alloxd's queue showed it gone at 19:19:40), g-erin behind a node-b job
// (the scheduler logged a pod deletion on node-b at 19:23:44, alloxd knew by 19:23:52; which pod
// is not recorded, g-carol is taken); h1 asks for preemption.
TEST(RealV128ReplayTest, AlloxdNodeCacheTrue) {
  Replay replay("alloxd-nodecache-true",
                {{"010", "19:19:40", "default/g1"}, {"013", "19:23:50", "default/g-carol"}});
  replay.run();
  EXPECT_EQ(8, replay.replayed_["filter"]);
  EXPECT_EQ(6, replay.replayed_["bind"]);
  EXPECT_EQ(1, replay.replayed_["preempt"]);
  EXPECT_EQ(6, replay.binds_) << "every recorded bind happens where alloxd kept the pod";
  EXPECT_EQ(2, replay.queued_answers_) << "g-dave and g-erin each queued once";
}

// alloxd at nodeCacheCapable=false (full Node objects), then the job-variant pair of
// manifests/examples/job-variants.yaml: the GPU variant is bound, the CPU variant refused.
TEST(RealV128ReplayTest, AlloxdNodeCacheFalseAndJobVariants) {
  Replay replay("alloxd-nodecache-false", {});
  replay.run();
  EXPECT_EQ(4, replay.replayed_["filter"]);
  EXPECT_EQ(3, replay.binds_);
  EXPECT_EQ(1, replay.sibling_refusals_) << "the CPU variant after the GPU one was bound";
}

// The stand-in's recordings (it admitted every node): the same bodies through alloxd. Four GPU
// jobs fill the cluster; h1's preemption must not evict them; its retry is queued and its
// recorded bind to a full node refused.
TEST(RealV128ReplayTest, SchedulerBodiesNodeCacheTrue) {
  Replay replay("nodecache-true", {});
  replay.run();
  EXPECT_EQ(3, replay.replayed_["prioritize"]);
  EXPECT_EQ(4, replay.binds_);
  EXPECT_EQ(1, replay.queued_answers_);
  EXPECT_EQ(1, replay.refused_binds_);
}

TEST(RealV128ReplayTest, SchedulerBodiesNodeCacheFalse) {
  Replay replay("nodecache-false", {});
  replay.run();
  EXPECT_EQ(2, replay.replayed_["prioritize"]);
  EXPECT_EQ(4, replay.binds_);
  EXPECT_EQ(1, replay.queued_answers_);
  EXPECT_EQ(1, replay.refused_binds_);
}

}  // namespace
}  // namespace allox::extender
