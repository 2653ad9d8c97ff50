// Isolation: no tenant harms another, no job stops scheduling for everyone. Tenancy of job ids,
// poisoned pods (bounded at read, or parked when the policy cannot take them), the admin's
// DELETE, re-created pods, retention of finished jobs, and bind intents reconciled at start-up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "alloxd/http/http_server.h"
#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "tests/alloxd/testing/api_pods.h"
#include "tests/alloxd/testing/changes.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;

// A clock tests move by hand, so answers that mention times are comparable.
struct FakeClock {
  std::atomic<double> now{1'000'000};
  std::function<double()> fn() {
    return [this] { return now.load(); };
  }
};

// With an API server (config.apiserver), `changes` must be given and outlive the service: it
// hears the service's events, and start_service waits on them until the service is ready (the
// nodes and pods listed, bind intents settled).
std::unique_ptr<ExtenderService> start_service(const ExtenderConfig& config,
                                               std::unique_ptr<SchedulingPolicy> policy,
                                               std::unique_ptr<ClusterApi> api, FakeClock* clock,
                                               testing::Changes* changes = nullptr) {
  ServiceOptions options;
  options.first_plan_wait = std::chrono::seconds(20);  // loaded CI machines solve slowly
  if (clock != nullptr) options.clock = clock->fn();
  if (changes != nullptr) options.on_change = changes->notifier();
  auto service = ExtenderService::create(config, std::move(policy), std::move(api), options);
  EXPECT_TRUE(service.ok()) << service.message();
  if (!service) return nullptr;
  (*service)->start();
  if (config.apiserver) {
    EXPECT_NE(nullptr, changes) << "an API server needs the changes to wait on";
    if (changes != nullptr) {
      EXPECT_TRUE(changes->until([&] { return (*service)->ready(); }));
    }
  }
  (*service)->solve_now();
  return std::move(*service);
}

std::unique_ptr<SchedulingPolicy> policy_named(const std::string& name) {
  auto policy = make_policy(name, PolicyOptions{});
  EXPECT_TRUE(policy.ok()) << policy.message();
  return std::move(*policy);
}

ExtenderArgs args_for(const json& pod, const std::vector<std::string>& nodes) {
  auto args = parse_extender_args(testing::filter_body(pod, nodes));
  EXPECT_TRUE(args.ok()) << args.message();
  return *args;
}

std::string admitted_node(const FilterResult& r) {
  return r.node_names && !r.node_names->empty() ? std::string(r.node_names->front())
                                                : std::string();
}

TEST(TenancyTest, AJobAnnotationNamingAnotherNamespaceIsRefused) {
  emulator::FakeApiServer api(testing::api_options("t"));
  api.add_node("node-1", {{"cpu", "32"}, {"nvidia.com/gpu", "2"}});
  testing::ScratchDir dir;
  auto config = testing::make_config({}, dir.file("state.db"));
  config.apiserver = ApiServerConfig{api.url(), "t", "", std::nullopt};
  testing::Changes changes;
  changes.watch(api);
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr, &changes);
  ASSERT_TRUE(service->ready());
  std::map<std::string, std::string> train = {
      {"allox.io/job", "train"}, {"allox.io/time.gpu", "10"}, {"allox.io/time.cpu", "100"}};
  json team_a_gpu = testing::pod_in_api(api, make_pod("team-a", "train", "nvidia.com/gpu", train));
  json team_a_cpu = testing::pod_in_api(api, make_pod("team-a", "train-cpu", "cpu", train));
  // The cross-tenant attack: a team-b pod claims team-a's job, directly or climbing out of its
  // namespace with "..".
  json intruder = testing::pod_in_api(
      api, make_pod("team-b", "intruder", "nvidia.com/gpu",
                    {{"allox.io/job", "team-a/train"}, {"allox.io/time.gpu", "10"}}));
  json climber = testing::pod_in_api(
      api, make_pod("team-b", "climber", "nvidia.com/gpu",
                    {{"allox.io/job", "team-b/../team-a/train"}, {"allox.io/time.gpu", "10"}}));
  service->filter(args_for(team_a_gpu, {"node-1"}));
  service->filter(args_for(team_a_cpu, {"node-1"}));
  for (const json* pod : {&intruder, &climber}) {
    const FilterResult refused = service->filter(args_for(*pod, {"node-1"}));
    EXPECT_TRUE(refused.node_names && refused.node_names->empty());
    EXPECT_EQ(
        "allox cannot read this pod: annotation allox.io/job: the job id has a '/' beyond "
        "the one between namespace and name",
        refused.failed_and_unresolvable_nodes.at("node-1"));
  }
  EXPECT_FALSE(service->job("team-b/team-a/train").ok()) << "no nested job is made";
  // The watch registers team-a's pods: asked again after each plan and watch change, until a
  // plan holds team-a's job.
  std::string node;
  EXPECT_TRUE(changes.until([&] {
    node = admitted_node(service->filter(args_for(team_a_gpu, {"node-1"})));
    return !node.empty();
  }));
  ASSERT_EQ("node-1", node);
  // team-a's job holds only team-a's pods (one of them once the controller admitted it).
  auto ours = service->job("team-a/train");
  ASSERT_TRUE(ours.ok());
  ASSERT_FALSE(ours->variants.empty());
  for (const VariantView& v : ours->variants) {
    EXPECT_EQ(0u, v.pod.rfind("team-a/", 0)) << "team-a's job is team-a's: " << v.pod;
  }
  EXPECT_NE("", service->bind({"intruder", "team-b", intruder["metadata"]["uid"], "node-1"}).error)
      << "the intruder was bound";
  ASSERT_EQ("", service->bind({"train", "team-a", team_a_gpu["metadata"]["uid"], "node-1"}).error)
      << "team-a's own pod was refused";
  // The unused variant goes, in the background, and only in team-a.
  EXPECT_TRUE(changes.until([&] { return !testing::pod_exists(api, "team-a", "train-cpu"); }))
      << "the unused variant stays";
  EXPECT_TRUE(testing::pod_exists(api, "team-b", "intruder"));
}

// A tenant's pod with a 100 KB allox.io/user is refused with a short reason on every node, and
// however often it is offered, the book, the plan and the answers stay as small as before.
TEST(IsolationTest, AHundredKilobyteUserIsRefusedAndCostsNothing) {
  testing::ScratchDir dir;
  auto config =
      testing::make_config({{"g", {{"gpu", 1}}}, {"h", {{"gpu", 1}}}}, dir.file("state.db"));
  config.tenancy.user_annotation_namespaces = {"lab"};
  auto service = start_service(config, policy_named("allox"), nullptr, nullptr);
  const std::string huge(100 << 10, 'u');
  std::vector<json> pods;
  for (int i = 0; i < 20; ++i) {
    pods.push_back(make_pod("lab", "long-user-" + std::to_string(i), "nvidia.com/gpu",
                            {{"allox.io/user", huge}, {"allox.io/time.gpu", "10"}}));
  }
  std::size_t largest_answer = 0;
  for (int round = 0; round < 50; ++round) {
    for (const json& pod : pods) {
      const FilterResult answer = service->filter(args_for(pod, {"g", "h"}));
      EXPECT_TRUE(answer.node_names && answer.node_names->empty());
      EXPECT_EQ(
          "allox cannot read this pod: annotation allox.io/user: 102400 bytes, over "
          "Kubernetes' limit of 63 for label values",
          answer.failed_and_unresolvable_nodes.at("g"));
      largest_answer = std::max(largest_answer, render(answer).size());
    }
  }
  EXPECT_LT(largest_answer, 1000u) << "the reason never carries the name";
  service->solve_now();
  const QueueView queue = service->queue();
  EXPECT_TRUE(queue.queued.empty()) << "no job was made for a refused pod";
  EXPECT_TRUE(service->plan()->parked.empty());
  const auto fairness = service->fairness();
  ASSERT_TRUE(fairness.ok());
  EXPECT_TRUE(fairness->users.empty());
  EXPECT_LT(service->metrics().render().size(), 100u << 10);
}

// Fails every round whose queue holds `poison` (as the matcher does for costs that overflow).
class PickyPolicy final : public SchedulingPolicy {
 public:
  PickyPolicy(std::unique_ptr<SchedulingPolicy> inner, std::string poison)
      : inner_(std::move(inner)), poison_(std::move(poison)) {}
  std::string name() const override { return "picky"; }
  Expected<Decision> decide(const ClusterState& state) override {
    for (const QueuedJob& q : state.queue) {
      if (q.job->id == poison_) return Error{"matcher: costs of job " + poison_ + " overflow"};
    }
    return inner_->decide(state);
  }

 private:
  std::unique_ptr<SchedulingPolicy> inner_;
  std::string poison_;
};

// Every normal pod's filter and prioritize answers, with or without the poisoned pods present.
std::vector<std::string> answers(bool with_poison, std::vector<std::string>* poisoned_answers) {
  testing::ScratchDir dir;
  auto config = testing::make_config(
      {{"g1", {{"gpu", 2}}}, {"g2", {{"gpu", 1}, {"cpu", 1}}}, {"c1", {{"cpu", 2}}}},
      dir.file("state.db"));
  FakeClock clock;
  auto service =
      start_service(config, std::make_unique<PickyPolicy>(policy_named("allox"), "team-z/picky"),
                    nullptr, &clock);
  const std::vector<std::string> nodes = {"g1", "g2", "c1"};
  std::vector<json> normal, poison;
  for (int i = 0; i < 12; ++i) {
    std::string ns = "team-" + std::string(1, static_cast<char>('a' + i % 3));
    normal.push_back(make_pod(ns, "job-" + std::to_string(i), i % 4 == 0 ? "cpu" : "nvidia.com/gpu",
                              {{"allox.io/time.gpu", std::to_string(50 + 10 * i)},
                               {"allox.io/time.cpu", std::to_string(400 + 7 * i)}}));
  }
  // Three poisons bounded at read, and one the policy cannot take.
  poison.push_back(make_pod("team-z", "huge", "nvidia.com/gpu", {{"allox.io/time.gpu", "1e300"}}));
  poison.push_back(
      make_pod("team-z", "long", "nvidia.com/gpu", {{"allox.io/time.gpu", "99999999999999"}}));
  poison.push_back(make_pod("team-z", "many", "nvidia.com/gpu",
                            {{"allox.io/iterations", "99999999999999999999"}}));
  poison.push_back(make_pod("team-z", "picky", "nvidia.com/gpu", {{"allox.io/time.gpu", "5"}}));
  for (std::size_t i = 0; i < normal.size(); ++i) {
    if (with_poison && i < poison.size()) service->filter(args_for(poison[i], nodes));
    service->filter(args_for(normal[i], nodes));
  }
  service->solve_now();
  std::vector<std::string> out;
  for (const json& pod : normal) {
    out.push_back(render(service->filter(args_for(pod, nodes))));
    out.push_back(render(service->prioritize(args_for(pod, nodes))));
  }
  if (with_poison) {
    for (const json& pod : poison) {
      poisoned_answers->push_back(render(service->filter(args_for(pod, nodes))));
    }
    auto parked = service->plan()->parked;
    EXPECT_EQ(1u, parked.size());
    EXPECT_NE(std::string::npos, parked["team-z/picky"].find("overflow"));
    EXPECT_NE(std::string::npos, service->job("team-z/picky")->parked.find("overflow"));
    EXPECT_NE(std::string::npos, to_json(*service->job("team-z/picky")).dump().find("\"parked\""));
  }
  return out;
}

TEST(IsolationTest, PoisonedPodsLeaveEveryOtherPodsAnswerUnchanged) {
  std::vector<std::string> poisoned;
  std::vector<std::string> clean = answers(false, nullptr);
  std::vector<std::string> dirty = answers(true, &poisoned);
  ASSERT_EQ(clean.size(), dirty.size());
  for (std::size_t i = 0; i < clean.size(); ++i) EXPECT_EQ(clean[i], dirty[i]) << "answer " << i;
  // Each poisoned pod gets its own reason on every node, and no Error.
  const char* reasons[] = {"out of range", "out of range", "within int64", "overflow"};
  ASSERT_EQ(4u, poisoned.size());
  for (std::size_t i = 0; i < poisoned.size(); ++i) {
    json r = json::parse(poisoned[i]);
    EXPECT_EQ("", r["Error"]) << poisoned[i];
    EXPECT_TRUE(r["NodeNames"].empty()) << poisoned[i];
    EXPECT_NE(std::string::npos,
              r["FailedAndUnresolvableNodes"]["g1"].get<std::string>().find(reasons[i]))
        << poisoned[i];
  }
}

HttpReply call(ExtenderService& service, const std::string& method, const std::string& target,
               const std::string& token = "test-token") {
  HttpRequest request;
  request.method = method;
  request.path = target.substr(0, target.find('?'));
  if (target.find('?') != std::string::npos) request.query = target.substr(target.find('?') + 1);
  if (!token.empty()) request.authorization = "Bearer " + token;
  return route(service, request);
}

TEST(IsolationTest, AnAdminRemovesAQueuedJobForGoodAcrossRestarts) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  json first = make_pod("lab", "first", "nvidia.com/gpu");
  json stuck = make_pod("lab", "stuck", "nvidia.com/gpu");
  {
    auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
    ASSERT_EQ("g", admitted_node(service->filter(args_for(first, {"g"}))));
    ASSERT_EQ("", service->bind({"first", "lab", "uid-first", "g"}).error);
    service->filter(args_for(stuck, {"g"}));
    EXPECT_EQ(401, call(*service, "DELETE", "/v1/jobs/lab/stuck", "wrong").status);
    EXPECT_EQ(404, call(*service, "DELETE", "/v1/jobs/lab/nope").status);
    EXPECT_EQ(409, call(*service, "DELETE", "/v1/jobs/lab/first").status) << "running";
    HttpReply removed = call(*service, "DELETE", "/v1/jobs/lab/stuck");
    ASSERT_EQ(200, removed.status) << removed.body;
    EXPECT_EQ(409, call(*service, "DELETE", "/v1/jobs/lab/stuck").status) << "twice";
  }
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  EXPECT_EQ(JobPhase::kRemoved, service->job("lab/stuck")->record.phase);
  ASSERT_TRUE(service->complete("lab/first").ok());
  service->solve_now();
  FilterResult again = service->filter(args_for(stuck, {"g"}));
  EXPECT_TRUE(again.node_names->empty());
  EXPECT_EQ("job lab/stuck was removed by an admin", again.failed_and_unresolvable_nodes.at("g"));
  EXPECT_TRUE(service->queue().queued.empty());
}

// The admin routes take a job id as the path gives it and check it first: ".." (sent as is or
// percent-decoded by the server), a '/' beyond the namespace separator or a control character
// is a 400 naming the field, never normalised into another job's id.
TEST(IsolationTest, AdminRoutesRefuseJobIdsThatEscapeTheirNamespace) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  service->filter(args_for(make_pod("team-a", "busy", "nvidia.com/gpu"), {"g"}));
  service->filter(args_for(make_pod("team-a", "train", "nvidia.com/gpu"), {"g"}));
  service->solve_now();
  struct Case {
    std::string method, target, error;
  };
  const std::string beyond = "job id: has a '/' beyond the one between namespace and name";
  const Case cases[] = {
      {"DELETE", "/v1/jobs/team-b/../team-a/train", beyond},
      {"DELETE", "/v1/jobs/team-a/..", "job id: has a \"..\" segment"},
      {"DELETE", "/v1/jobs/../team-a", "job id: has a \"..\" segment"},
      {"DELETE", "/v1/jobs/team-a/train/extra", beyond},
      {"DELETE", "/v1/jobs/train", "job id: expected <namespace>/<name>, got no '/'"},
      {"DELETE", std::string("/v1/jobs/team-a/tr\0ain", 23), "job id: holds a control character"},
      {"POST", "/v1/jobs/team-b/../team-a/train/done", beyond},
      {"POST", "/v1/jobs/team-a/../done", "job id: has a \"..\" segment"},
      {"GET", "/v1/jobs/team-b/../team-a/train", beyond},
      {"GET", "/v1/jobs/team-a/train\r\nX: y", "job id: holds a control character"},
      {"GET", "/v1/jobs/team-a/" + std::string(300, 'x'),
       "job id: name of 300 bytes, over Kubernetes' limit of 253 for names"},
  };
  for (const Case& c : cases) {
    HttpReply reply = call(*service, c.method, c.target);
    EXPECT_EQ(400, reply.status) << c.method << " " << c.target;
    EXPECT_EQ(c.error, json::parse(reply.body).value("error", "")) << c.target;
  }
  HttpRequest profiles;
  profiles.method = "POST";
  profiles.path = "/v1/profiles";
  profiles.authorization = "Bearer test-token";
  profiles.body = R"({"job": "team-b/../team-a/train", "device": "gpu", "iterations": 5,
                      "seconds": 2})";
  HttpReply reply = route(*service, profiles);
  EXPECT_EQ(400, reply.status);
  EXPECT_EQ("samples[0].job: has a '/' beyond the one between namespace and name",
            json::parse(reply.body).value("error", ""));
  // The job the attacks aimed at is untouched, and a well-formed id still works.
  EXPECT_EQ(JobPhase::kQueued, service->job("team-a/train")->record.phase);
  EXPECT_EQ(200, call(*service, "GET", "/v1/jobs/team-a/train").status);
  EXPECT_EQ(200, call(*service, "DELETE", "/v1/jobs/team-a/train").status);
}

// /v1/queue and /v1/fairness are paged (?limit=&continue=) with their totals, 500 by default;
// the status page shows the first 100 of each list and says how many more there are.
TEST(IsolationTest, ListsArePagedAndTheStatusPageShowsTheFirstPage) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  config.tenancy.user_annotation_namespaces = {"lab"};
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  constexpr int kJobs = 1203;
  for (int i = 0; i < kJobs; ++i) {
    service->filter(args_for(make_pod("lab", "job-" + std::to_string(i), "nvidia.com/gpu",
                                      {{"allox.io/user", "user-" + std::to_string(i)}}),
                             {"g"}));
  }
  service->solve_now();
  ASSERT_EQ(static_cast<std::size_t>(kJobs), service->queue().queued.size());

  json first = json::parse(call(*service, "GET", "/v1/queue").body);
  EXPECT_EQ(500u, first["queued"].size()) << "500 by default";
  EXPECT_EQ(kJobs, first["page"]["queued_total"]);
  EXPECT_EQ("500", first["page"]["continue"]);
  // Walk every page of 400: each job once, in plan order, and the last page says so.
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    json page = json::parse(call(*service, "GET", "/v1/queue?limit=400&continue=" + token).body);
    for (const json& job : page["queued"]) seen.insert(job["id"].get<std::string>());
    token = page["page"]["continue"].get<std::string>();
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(4, pages);
  EXPECT_EQ(static_cast<std::size_t>(kJobs), seen.size());

  json users = json::parse(call(*service, "GET", "/v1/fairness?limit=1000").body);
  EXPECT_EQ(1000u, users["users"].size());
  EXPECT_EQ(kJobs, users["page"]["users_total"]);
  EXPECT_EQ("1000", users["page"]["continue"]);
  EXPECT_EQ(static_cast<std::size_t>(kJobs), users["queued"].get<std::size_t>())
      << "the totals count every user";
  json last = json::parse(call(*service, "GET", "/v1/fairness?limit=1000&continue=1000").body);
  EXPECT_EQ(203u, last["users"].size());
  EXPECT_EQ("", last["page"]["continue"]);

  for (const char* bad : {"limit=0", "limit=5001", "limit=x", "limit=-1", "limit="}) {
    HttpReply reply = call(*service, "GET", std::string("/v1/queue?") + bad);
    EXPECT_EQ(400, reply.status) << bad;
    EXPECT_EQ("limit: expected a whole number from 1 to 5000",
              json::parse(reply.body).value("error", ""))
        << bad;
  }
  HttpReply reply = call(*service, "GET", "/v1/fairness?continue=abc");
  EXPECT_EQ(400, reply.status);
  EXPECT_EQ("continue: expected the token of a previous page's page.continue",
            json::parse(reply.body).value("error", ""));
  EXPECT_EQ(0u,
            json::parse(call(*service, "GET", "/v1/queue?continue=99999").body)["queued"].size())
      << "past the end: an empty page";

  const std::string page = call(*service, "GET", "/").body;
  EXPECT_NE(std::string::npos, page.find("Queued jobs: 1203")) << "the summary counts all";
  EXPECT_NE(std::string::npos, page.find("and 1103 more queued jobs")) << page.substr(0, 2000);
  EXPECT_NE(std::string::npos, page.find("and 1103 more users"));
  EXPECT_NE(std::string::npos, page.find("/v1/queue?limit=500&amp;continue=100"));
  EXPECT_LT(page.size(), 300u << 10);
}

TEST(IsolationTest, ARecreatedPodIsANewJobAndFinishedJobsLeaveMemory) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  config.retention.finished_seconds = 600;
  FakeClock clock;
  auto service = start_service(config, policy_named("fifo"), nullptr, &clock);
  json old_pod = make_pod("lab", "train", "nvidia.com/gpu");
  ASSERT_EQ("g", admitted_node(service->filter(args_for(old_pod, {"g"}))));
  ASSERT_EQ("", service->bind({"train", "lab", "uid-train", "g"}).error);
  ASSERT_TRUE(service->complete("lab/train").ok());
  service->solve_now();
  // A late filter of the finished pod is refused; the same name with a new UID is a new run.
  EXPECT_EQ("job lab/train has finished",
            service->filter(args_for(old_pod, {"g"})).failed_and_unresolvable_nodes.at("g"));
  json new_pod = old_pod;
  new_pod["metadata"]["uid"] = "uid-train-2";
  EXPECT_EQ("g", admitted_node(service->filter(args_for(new_pod, {"g"}))));
  EXPECT_EQ(JobPhase::kQueued, service->job("lab/train")->record.phase);
  ASSERT_EQ("", service->bind({"train", "lab", "uid-train-2", "g"}).error);
  ASSERT_TRUE(service->complete("lab/train").ok());

  clock.now = clock.now + 601;
  // The next round (a new pod wakes it; its filter waits for it) forgets runs finished
  // before now - 600.
  service->filter(args_for(make_pod("lab", "next", "nvidia.com/gpu"), {"g"}));
  EXPECT_FALSE(service->job("lab/train").ok()) << "still in memory after retention";
  service.reset();
  auto store = Store::open(config.database);
  ASSERT_TRUE(store.ok());
  auto history = (*store)->load();
  int done_runs = 0;
  for (const JobRecord& run : history->jobs) {
    done_runs += run.id == "lab/train" && run.phase == JobPhase::kDone;
  }
  EXPECT_EQ(2, done_runs) << "both runs stay in the history";
}

// The wall clock steps back (NTP, a restored VM) between a pod's arrival, its bind and its end:
// the run is recorded starting on arrival and ending on its start, never before, and the
// fairness report (which refuses a run that starts before it arrives) keeps answering.
TEST(IsolationTest, AClockThatStepsBackRecordsNoRunBeforeItsArrival) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  FakeClock clock;
  auto service = start_service(config, policy_named("fifo"), nullptr, &clock);
  const double arrival = clock.now;
  json pod = make_pod("lab", "train", "nvidia.com/gpu");
  ASSERT_EQ("g", admitted_node(service->filter(args_for(pod, {"g"}))));
  clock.now = arrival - 3600;
  ASSERT_EQ("", service->bind({"train", "lab", "uid-train", "g"}).error);
  EXPECT_EQ(arrival, service->job("lab/train")->record.start);
  ASSERT_TRUE(service->fairness().ok()) << service->fairness().message();
  clock.now = arrival - 7200;
  ASSERT_TRUE(service->complete("lab/train").ok());
  EXPECT_EQ(arrival, service->job("lab/train")->record.finish);
  auto report = service->fairness();
  ASSERT_TRUE(report.ok()) << report.message();
  service.reset();
  auto store = Store::open(config.database);
  ASSERT_TRUE(store.ok()) << store.message();
  auto state = (*store)->load();
  ASSERT_TRUE(state.ok()) << state.message();
  ASSERT_EQ(1u, state->jobs.size());
  EXPECT_EQ(arrival, state->jobs[0].start);
  EXPECT_EQ(arrival, state->jobs[0].finish);
}

TEST(IsolationTest, AVariantTheFinishedRunNeverSawDoesNotRunTheJobAgain) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"g", {{"gpu", 1}}}}, dir.file("state.db"));
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  std::map<std::string, std::string> train = {{"allox.io/job", "train"},
                                              {"allox.io/time.gpu", "10"}};
  ASSERT_EQ("g", admitted_node(service->filter(
                     args_for(make_pod("lab", "train-gpu", "nvidia.com/gpu", train), {"g"}))));
  ASSERT_EQ("", service->bind({"train-gpu", "lab", "uid-train-gpu", "g"}).error);
  ASSERT_TRUE(service->complete("lab/train").ok());
  service->solve_now();
  // Its other variant was pending all along (kube-scheduler's own filters kept it away).
  FilterResult late =
      service->filter(args_for(make_pod("lab", "train-gpu-2", "nvidia.com/gpu", train), {"g"}));
  EXPECT_TRUE(late.node_names->empty());
  EXPECT_EQ("job lab/train has finished", late.failed_and_unresolvable_nodes.at("g"));
  EXPECT_EQ(JobPhase::kDone, service->job("lab/train")->record.phase);
}

// Writes a queued job with a bind intent, as alloxd leaves them when killed between recording
// the intent and hearing the API server's answer.
void leave_intent(const std::string& database, const std::string& pod_name,
                  const std::string& uid = "") {
  auto store = Store::open(database);
  ASSERT_TRUE(store.ok());
  JobRecord job;
  job.id = "lab/" + pod_name;
  job.user = "lab";
  job.arrival = 1;
  JobVariant variant;
  variant.pod = {pod_name, "lab", uid.empty() ? "uid-" + pod_name : uid};
  variant.job_id = job.id;
  variant.user = "lab";
  variant.device = "gpu";
  auto row = (*store)->record_arrival(job, variant);
  ASSERT_TRUE(row.ok());
  ASSERT_TRUE((*store)->record_bind_intent({*row, job.id, variant.pod, "node-1", "gpu", 2}).ok());
}

TEST(IsolationTest, BindIntentsAreReconciledFromSpecNodeNameAtStartUp) {
  emulator::FakeApiServer api(testing::api_options("t"));
  api.add_node("node-1", {{"nvidia.com/gpu", "2"}});
  testing::ScratchDir dir;
  auto config = testing::make_config({}, dir.file("state.db"));
  config.apiserver = ApiServerConfig{api.url(), "t", "", std::nullopt};
  const std::string landed_uid =
      testing::pod_in_api(api, make_pod("lab", "landed", "nvidia.com/gpu"))["metadata"]["uid"];
  const std::string lost_uid =
      testing::pod_in_api(api, make_pod("lab", "lost", "nvidia.com/gpu"))["metadata"]["uid"];
  leave_intent(config.database, "landed", landed_uid);  // the API server bound it before the kill
  leave_intent(config.database, "lost", lost_uid);      // the kill came before the API call
  ASSERT_FALSE(emulator::failed(api.objects().bind(
      "lab", "landed",
      {{"apiVersion", "v1"},
       {"kind", "Binding"},
       {"metadata", {{"name", "landed"}, {"namespace", "lab"}, {"uid", landed_uid}}},
       {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "node-1"}}}})));
  testing::Changes changes;
  changes.watch(api);
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr, &changes);
  ASSERT_TRUE(service->ready());
  auto landed = service->job("lab/landed");
  EXPECT_EQ(JobPhase::kRunning, landed->record.phase);
  EXPECT_EQ("node-1", landed->record.node);
  EXPECT_EQ("", landed->bind_in_doubt);
  auto lost = service->job("lab/lost");
  EXPECT_EQ(JobPhase::kQueued, lost->record.phase);
  EXPECT_EQ("", lost->bind_in_doubt);
  EXPECT_TRUE((*Store::open_for_reading(config.database))->load()->intents.empty());
}

TEST(IsolationTest, ReconcileIsAFunctionOverObservedPods) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"node-1", {{"gpu", 2}}}}, dir.file("state.db"));
  leave_intent(config.database, "a");
  leave_intent(config.database, "b");
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  EXPECT_EQ("node-1", service->job("lab/a")->bind_in_doubt);
  FilterResult waiting =
      service->filter(args_for(make_pod("lab", "a", "nvidia.com/gpu"), {"node-1"}));
  EXPECT_TRUE(waiting.node_names->empty()) << "a bind in doubt is not admitted again";
  // An informer's partial view: only a is seen, bound. b stays in doubt.
  service->reconcile_binds({{{"a", "lab", "uid-a"}, true, "node-1", "Running"}}, false);
  EXPECT_EQ(JobPhase::kRunning, service->job("lab/a")->record.phase);
  EXPECT_EQ("node-1", service->job("lab/b")->bind_in_doubt);
  // Its first full list does not hold b: the bind never happened.
  service->reconcile_binds({}, true);
  EXPECT_EQ(JobPhase::kQueued, service->job("lab/b")->record.phase);
  EXPECT_EQ("", service->job("lab/b")->bind_in_doubt);
}

TEST(IsolationTest, ABindInDoubtOnANodeOutsideTheInventoryLeavesTheJobQueuedAndItsIntentGone) {
  testing::ScratchDir dir;
  auto config = testing::make_config({{"node-1", {{"gpu", 2}}}}, dir.file("state.db"));
  leave_intent(config.database, "a");
  leave_intent(config.database, "b");
  auto service = start_service(config, policy_named("fifo"), nullptr, nullptr);
  // a landed on a node alloxd does not know: it cannot account for the machine, so it does not
  // start the job there (a double booking of node-1's GPUs would follow); b landed on node-1.
  service->reconcile_binds({{{"a", "lab", "uid-a"}, true, "node-9", "Running"},
                            {{"b", "lab", "uid-b"}, true, "node-1", "Running"}},
                           true);
  EXPECT_EQ(JobPhase::kQueued, service->job("lab/a")->record.phase);
  EXPECT_EQ("", service->job("lab/a")->bind_in_doubt);
  EXPECT_EQ(JobPhase::kRunning, service->job("lab/b")->record.phase);
  service.reset();
  auto state = (*Store::open_for_reading(config.database))->load();
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->intents.empty()) << "both intents are settled in the store too";
  auto restarted = start_service(config, policy_named("fifo"), nullptr, nullptr);
  EXPECT_EQ(JobPhase::kQueued, restarted->job("lab/a")->record.phase);
  EXPECT_EQ("", restarted->job("lab/a")->bind_in_doubt);
  EXPECT_EQ(JobPhase::kRunning, restarted->job("lab/b")->record.phase);
  EXPECT_EQ("node-1", restarted->job("lab/b")->record.node);
}

}  // namespace
}  // namespace allox::extender
