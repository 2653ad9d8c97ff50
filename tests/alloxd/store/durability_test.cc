// Kill -9 durability: the real alloxd binary serves a stream of filters, binds (through a fake
// API server), profiles and completions, and is killed with SIGKILL mid-stream, again and
// again. After every restart on the same database, every acknowledged change must be there,
// every pod the API server bound must be a running or done job on that node (binds are
// recorded as intents first and reconciled at start-up), and no row may be an orphan.
//
// ALLOX_KILLS sets the number of kills (3 here; scripts/kill9.sh runs 100).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kubesim/alloxd_process.h"
#include "tests/alloxd/testing/api_pods.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using nlohmann::json;
using testing::make_pod;

constexpr const char* kAdmin = "Bearer durable-token";

// What alloxd acknowledged, over all its lives.
struct Acknowledged {
  std::mutex mu;
  std::condition_variable changed;
  int changes = 0;                           // acknowledged writes so far
  std::vector<std::string> queued_jobs;      // filter answered without Error
  std::map<std::string, std::string> bound;  // job -> node
  std::set<std::string> profiled;
  std::set<std::string> done;
  std::deque<int> pending;         // job numbers filtered but not bound: retried
  std::vector<std::string> stops;  // why each life's stream ended, when not killed
  int streams_ended = 0;

  // The stream ends at the first request alloxd did not answer as asked: killed (no answer),
  // or an answer worth reading when the stream did too little.
  void stopped(const std::string& request, const testing::Response& response) {
    std::lock_guard lock(mu);
    stops.push_back(request + ": " +
                    (response.status == 0 ? std::string("no answer (killed, or 10 s passed)")
                                          : std::to_string(response.status) + " " + response.body));
  }

  void note_end() {
    std::lock_guard lock(mu);
    ++streams_ended;
    changed.notify_all();
  }
  void note(const std::function<void()>& record) {
    std::lock_guard lock(mu);
    record();
    ++changes;
    changed.notify_all();
  }
};

// POST /v1/profiles as a job controller must: a job whose pod was created a moment ago is
// unknown (404) until alloxd's watch delivers the pod (a /filter of an unseen pod answers
// without registering it), so a 404 is retried for a while; any other answer is final.
testing::Response post_profile_once_known(const std::string& url, const std::string& body) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto answer = testing::http_request(url, "POST", "/v1/profiles", body, kAdmin);
    if (answer.status != 404 || std::chrono::steady_clock::now() > deadline) return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// One client of alloxd until it stops answering, as kube-scheduler and a job controller
// would be: first complete the jobs left running by the last life (freeing machines), then
// alternate new jobs with retries of queued ones. A new job is filtered (a GPU or a CPU pod)
// and profiled; an admitted one is bound; every other bound job completes at once.
void stream(const std::string& url, emulator::FakeApiServer& api, std::atomic<int>& next_job,
            Acknowledged& acked) {
  std::vector<std::string> left_running;
  {
    std::lock_guard lock(acked.mu);
    for (const auto& [id, node] : acked.bound) {
      if (!acked.done.count(id)) left_running.push_back(id);
    }
  }
  for (const std::string& id : left_running) {
    auto done = testing::http_request(url, "POST", "/v1/jobs/" + id + "/done", "", kAdmin);
    if (done.status == 0) return acked.stopped("POST /v1/jobs/" + id + "/done", done);
    if (done.status == 200) acked.note([&] { acked.done.insert(id); });
  }
  for (int step = 0;; ++step) {
    int i = -1;
    bool fresh = true;
    if (step % 2 == 1) {
      std::lock_guard lock(acked.mu);
      if (!acked.pending.empty()) {
        i = acked.pending.front();
        acked.pending.pop_front();
        fresh = false;
      }
    }
    if (i < 0) i = next_job++;
    std::string name = "job-" + std::to_string(i);
    std::string id = "lab/" + name;
    bool cpu = i % 3 == 0;
    // As kube-scheduler would, the pod comes from the API server (a binding needs its uid).
    json pod = testing::pod_in_api(api, make_pod("lab", name, cpu ? "cpu" : "nvidia.com/gpu",
                                                 {{"allox.io/time.gpu", "50"},
                                                  {"allox.io/time.cpu", "200"},
                                                  {"allox.io/iterations", "100"}}));
    auto filter =
        testing::http_request(url, "POST", "/filter", testing::filter_body(pod, {"n1", "n2"}));
    if (filter.status != 200) return acked.stopped("POST /filter", filter);
    json result = json::parse(filter.body);
    if (!result["Error"].get<std::string>().empty()) continue;
    if (fresh) {
      acked.note([&] { acked.queued_jobs.push_back(id); });
      auto profile = post_profile_once_known(
          url,
          json{{"job", id}, {"device", cpu ? "cpu" : "gpu"}, {"iterations", 10}, {"seconds", 1.5}}
              .dump());
      if (profile.status != 200) return acked.stopped("POST /v1/profiles", profile);
      acked.note([&] { acked.profiled.insert(id); });
    }
    if (result["NodeNames"].empty()) {
      std::lock_guard lock(acked.mu);
      acked.pending.push_back(i);
      continue;
    }
    std::string node = result["NodeNames"][0];
    auto bind = testing::http_request(url, "POST", "/bind",
                                      json{{"PodName", name},
                                           {"PodNamespace", "lab"},
                                           {"PodUID", pod["metadata"]["uid"]},
                                           {"Node", node}}
                                          .dump());
    if (bind.status != 200) return acked.stopped("POST /bind", bind);
    if (!json::parse(bind.body)["Error"].get<std::string>().empty()) {
      std::lock_guard lock(acked.mu);
      acked.pending.push_back(i);
      continue;
    }
    acked.note([&] { acked.bound[id] = node; });
    if (i % 2 == 1) continue;
    auto done = testing::http_request(url, "POST", "/v1/jobs/" + id + "/done", "", kAdmin);
    if (done.status != 200) return acked.stopped("POST /v1/jobs/" + id + "/done", done);
    acked.note([&] { acked.done.insert(id); });
  }
}

std::int64_t count(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return -1;
  std::int64_t n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  return n;
}

// Rows that belong to nothing, or jobs missing a row they must have. Each query names a kind.
std::map<std::string, std::int64_t> orphans(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::map<std::string, std::int64_t> out = {
      {"queued job without a variant",
       count(db,
             "SELECT count(*) FROM jobs j WHERE phase = 'queued' AND NOT EXISTS "
             "(SELECT 1 FROM variants v WHERE v.job_row = j.row)")},
      {"variant without its job", count(db,
                                        "SELECT count(*) FROM variants v WHERE NOT EXISTS "
                                        "(SELECT 1 FROM jobs j WHERE j.row = v.job_row)")},
      {"profile without its job", count(db,
                                        "SELECT count(*) FROM profiles p WHERE NOT EXISTS "
                                        "(SELECT 1 FROM jobs j WHERE j.row = p.job_row)")},
      {"usage without its job", count(db,
                                      "SELECT count(*) FROM usage u WHERE NOT EXISTS "
                                      "(SELECT 1 FROM jobs j WHERE j.row = u.job_row)")},
      {"started job without usage",
       count(db,
             "SELECT count(*) FROM jobs j WHERE phase IN ('running', 'done') AND NOT EXISTS "
             "(SELECT 1 FROM usage u WHERE u.job_row = j.row)")},
      {"bind intent left after start-up", count(db, "SELECT count(*) FROM bind_intents")},
  };
  sqlite3_close(db);
  return out;
}

int kills_wanted() {
  const char* text = std::getenv("ALLOX_KILLS");
  int kills = text != nullptr ? std::atoi(text) : 0;
  return kills > 0 ? kills : 3;
}

// Everything acknowledged in earlier lives is there; returns how many changes were lost.
int check_acknowledged(const std::string& url, Acknowledged& acked, emulator::FakeApiServer& api,
                       int life) {
  std::lock_guard lock(acked.mu);
  int lost = 0;
  auto job_at = [&](const std::string& id) {
    return json::parse(testing::http_request(url, "GET", "/v1/jobs/" + id).body);
  };
  for (const auto& [id, node] : acked.bound) {
    json job = job_at(id);
    bool kept = job["phase"] != "queued" && job["node"] == node;
    lost += !kept;
    EXPECT_TRUE(kept) << "life " << life << ": " << id << " was bound to " << node << ": "
                      << job.dump();
  }
  for (const std::string& id : acked.done) {
    json job = job_at(id);
    lost += job["phase"] != "done";
    EXPECT_EQ("done", job["phase"]) << "life " << life << ": " << id;
  }
  for (const std::string& id : acked.profiled) {
    int samples = 0;
    json job = job_at(id);
    for (const json& v : job["variants"]) samples += v["profile_samples"].get<int>();
    lost += samples < 1;
    EXPECT_GE(samples, 1) << "life " << life << ": " << id << " lost its profile: " << job.dump();
  }
  for (const std::string& id : acked.queued_jobs) {
    int status = testing::http_request(url, "GET", "/v1/jobs/" + id).status;
    lost += status != 200;
    EXPECT_EQ(200, status) << "life " << life << ": " << id << " was acknowledged but is gone";
  }
  // Every bind the API server holds is a started job on that node in alloxd, acknowledged or
  // not (the kill may come between the API call and the answer).
  for (const testing::BoundPod& binding : testing::bound_pods(api)) {
    std::string id = binding.namespace_name + "/" + binding.name;
    json job = job_at(id);
    bool started = job["phase"] == "running" || job["phase"] == "done";
    lost += !started || job.value("node", "") != binding.node;
    EXPECT_TRUE(started) << "life " << life << ": the API server bound " << id << " but alloxd has "
                         << job.dump();
    EXPECT_EQ(binding.node, job.value("node", "")) << id;
  }
  return lost;
}

TEST(DurabilityTest, RepeatedSigkillMidStreamLosesNothingAcknowledged) {
  const int kills = kills_wanted();
  emulator::FakeApiServer api(testing::api_options("api-token"));
  api.add_node("n1", {{"cpu", "64"}, {"nvidia.com/gpu", "4"}});
  api.add_node("n2", {{"nvidia.com/gpu", "4"}});
  testing::ScratchDir dir;
  const std::string database = dir.file("state.db");
  const std::string config = dir.file("alloxd.yaml");
  {
    std::ofstream out(config);
    out << "database: " << database << "\n"
        << "policy: fifo\ntick: 0.2\nadmin_token: durable-token\n"
        << "apiserver: {url: '" << api.url() << "', token: api-token}\n";
  }
  Acknowledged acked;
  std::atomic<int> next_job{0};
  std::mt19937 random(11);
  int lost = 0;
  for (int life = 0; life <= kills; ++life) {
    // start() returns once alloxd logged its 'ready' line (the inventory from the API server,
    // bind intents reconciled, a first plan): an event, after which /readyz must answer 200.
    auto server = testing::start_alloxd_binary(config, database);
    ASSERT_TRUE(server.ok()) << "life " << life << ": alloxd did not come back\n"
                             << server.message();
    const std::string url = (*server)->url();
    ASSERT_EQ(200, testing::http_request(url, "GET", "/readyz").status) << "life " << life;
    lost += check_acknowledged(url, acked, api, life);
    if (life == kills) break;

    // Run the stream, and pull the plug after a random number of acknowledged changes, while
    // requests are in flight.
    std::thread client([&, url] {
      stream(url, api, next_job, acked);
      acked.note_end();
    });
    {
      // The first life runs until jobs were bound and one completed as well (a kill point drawn
      // from the changes alone often falls before the first plan, in every life).
      std::unique_lock lock(acked.mu);
      const int target = acked.changes + 1 + static_cast<int>(random() % 12);
      const std::size_t binds = life == 0 ? 2 : 0, completions = life == 0 ? 1 : 0;
      const int ended = acked.streams_ended;
      acked.changed.wait_for(lock, std::chrono::seconds(60), [&] {
        return acked.streams_ended > ended ||
               (acked.changes >= target && acked.bound.size() >= binds &&
                acked.done.size() >= completions);
      });
    }
    if (!(*server)->running()) {
      const std::string log = (*server)->log();
      ADD_FAILURE() << "life " << life << ": alloxd exited before it was killed; its log ends:\n"
                    << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    }
    (*server)->kill();
    client.join();
  }
  EXPECT_EQ(0, lost);
  std::int64_t orphan_rows = 0;
  for (const auto& [kind, n] : orphans(database)) {
    EXPECT_EQ(0, n) << kind;
    orphan_rows += n;
  }
  std::lock_guard lock(acked.mu);
  std::string stops;
  for (const std::string& stop : acked.stops) stops += "\n  " + stop;
  EXPECT_GE(acked.bound.size(), 2u) << "the stream did too little; it stopped at:" << stops;
  EXPECT_GE(acked.done.size(), 1u) << "the stream did too little";
  std::printf(
      "kills=%d acknowledged_changes=%d jobs=%zu bound=%zu done=%zu api_binds=%zu "
      "lost=%d orphan_rows=%lld\n",
      kills, acked.changes, acked.queued_jobs.size(), acked.bound.size(), acked.done.size(),
      testing::bound_pods(api).size(), lost, static_cast<long long>(orphan_rows));
}

}  // namespace
}  // namespace allox::extender
