// alloxd's SIGTERM path (alloxd/main.cc) on the real binary: under a stream of filters and
// binds it exits cleanly (no signal, status 0), and with a bind stuck on an API server that
// never answers it still exits within 5 s. The 100-run version is
// tests/alloxd/load/sigterm_load.sh.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "alloxd/http/http_server.h"
#include "kubesim/alloxd_process.h"
#include "tests/alloxd/testing/changes.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using testing::make_pod;

// The alloxd binary on a free port, for one test; start() returns once it logged 'ready'.
std::unique_ptr<emulator::AlloxdProcess> start_alloxd(const testing::ScratchDir& dir,
                                                      const std::string& config) {
  auto alloxd = testing::start_alloxd_binary(config, dir.file("state.db"));
  EXPECT_TRUE(alloxd.ok()) << alloxd.message();
  return alloxd ? std::move(*alloxd) : nullptr;
}

// SIGTERM and the wait for the exit (an event: the process's pidfd), timed.
std::optional<int> terminate(emulator::AlloxdProcess& alloxd, std::chrono::milliseconds limit,
                             Clock::duration* took) {
  const auto begin = Clock::now();
  auto status = alloxd.terminate(limit);
  *took = Clock::now() - begin;
  return status;
}

std::string write_config(const testing::ScratchDir& dir, const std::string& extra) {
  std::string path = dir.file("alloxd.yaml");
  std::ofstream out(path);
  out << "policy: fifo\ntick: 0.2\n"
      << "admin_token: t\n"
      << extra;
  return path;
}

TEST(ShutdownTest, SigtermUnderLoadExitsCleanly) {
  for (int run = 0; run < 4; ++run) {
    testing::ScratchDir dir;
    std::string config =
        write_config(dir,
                     "nodes:\n  - {name: n1, machines: {gpu: 8, cpu: 2}}\n  - {name: n2, machines: "
                     "{gpu: 8}}\n");
    auto alloxd = start_alloxd(dir, config);
    ASSERT_TRUE(alloxd);
    std::atomic<bool> stop{false};
    std::atomic<int> answered{0};
    testing::Changes answers;  // one event per answered filter
    std::vector<std::thread> clients;
    clients.reserve(4);
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; !stop; ++i) {
          std::string name = "p" + std::to_string(c) + "-" + std::to_string(i);
          auto filter = testing::http_request(
              alloxd->url(), "POST", "/filter",
              testing::filter_body(make_pod("lab", name, i % 2 ? "cpu" : "nvidia.com/gpu"),
                                   {"n1", "n2"}));
          if (filter.status != 200) continue;
          ++answered;
          answers.notify();
          auto admitted = json::parse(filter.body, nullptr, false);
          if (admitted.is_object() && admitted["NodeNames"].is_array() &&
              !admitted["NodeNames"].empty()) {
            testing::http_request(
                alloxd->url(), "POST", "/bind",
                json{{"PodName", name}, {"PodNamespace", "lab"}, {"Node", admitted["NodeNames"][0]}}
                    .dump());
          }
          testing::http_request(alloxd->url(), "GET", "/v1/queue");
        }
      });
    }
    EXPECT_TRUE(answers.until([&] { return answered >= 20 + 10 * run; }))
        << "run " << run << ": too few answers before SIGTERM";
    Clock::duration took{};
    auto status = terminate(*alloxd, std::chrono::seconds(10), &took);
    stop = true;
    for (std::thread& t : clients) t.join();
    // alloxd's own account of its shutdown (drain, watchdog) says why when one of these fails.
    ASSERT_TRUE(status.has_value())
        << "run " << run << ": alloxd still running 10 s after SIGTERM\n"
        << alloxd->log();
    EXPECT_TRUE(WIFEXITED(*status)) << "run " << run << ": killed by signal "
                                    << (WIFSIGNALED(*status) ? WTERMSIG(*status) : 0) << "\n"
                                    << alloxd->log();
    EXPECT_EQ(0, WEXITSTATUS(*status)) << "run " << run << "\n" << alloxd->log();
    EXPECT_LT(took, std::chrono::seconds(5)) << "run " << run << "\n" << alloxd->log();
  }
}

// An API server that lists one GPU node and one pending pod (lab/p, which the watch registers),
// notes the controller's Admitted event for it, and never answers a binding until released. (A watch gets the list again, which the informer
// takes as a broken stream and re-lists after its back-off: enough for alloxd to be ready.)
class StuckApiServer {
 public:
  StuckApiServer() {
    HttpHandler handler;
    handler.serve = [this](const HttpRequest& request) {
      if (request.path == "/api/v1/nodes") {
        json node = {{"metadata", {{"name", "g"}}},
                     {"status", {{"allocatable", {{"nvidia.com/gpu", "1"}, {"cpu", "4"}}}}}};
        return HttpReply{200, "application/json",
                         json{{"kind", "NodeList"},
                              {"metadata", {{"resourceVersion", "1"}}},
                              {"items", json::array({node})}}
                             .dump()};
      }
      if (request.path == "/api/v1/pods") {
        return HttpReply{200, "application/json",
                         json{{"kind", "PodList"},
                              {"metadata", {{"resourceVersion", "1"}}},
                              {"items", json::array({make_pod("lab", "p", "nvidia.com/gpu")})}}
                             .dump()};
      }
      if (request.method == "POST" && request.path == "/api/v1/namespaces/lab/events" &&
          request.body.find("\"Admitted\"") != std::string::npos) {
        std::lock_guard lock(mu_);
        admitted_seen_ = true;
        cv_.notify_all();
      }
      if (request.path.ends_with("/binding")) {
        std::unique_lock lock(mu_);
        binding_seen_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
        return HttpReply{201, "application/json", "{}"};
      }
      return HttpReply{404, "application/json", R"({"kind":"Status","code":404})"};
    };
    handler.may_block = [](const HttpRequest&) { return true; };
    HttpServerOptions options;
    options.port = 0;
    auto server = HttpServer::start(std::move(handler), options);
    if (server) server_ = std::move(*server);
  }
  ~StuckApiServer() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  std::string url() const { return server_ ? server_->url() : ""; }
  bool wait_for_binding(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return binding_seen_; });
  }
  // The controller admitted lab/p (its plan starts p now, and every later plan keeps it there).
  bool wait_for_admission(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return admitted_seen_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool binding_seen_ = false;
  bool admitted_seen_ = false;
  bool released_ = false;
  std::unique_ptr<HttpServer> server_;  // last: stopped before the state its handler uses
};

TEST(ShutdownTest, SigtermDuringABindStuckOnTheApiServerExitsWithin5s) {
  StuckApiServer api;
  ASSERT_FALSE(api.url().empty());
  testing::ScratchDir dir;
  std::string config = write_config(dir, "apiserver: {url: " + api.url() + ", token: x}\n");
  auto alloxd = start_alloxd(dir, config);
  ASSERT_TRUE(alloxd);
  // Asked once the controller admitted the pod the watch listed (a pod the book lacks is left
  // to the watch): the plan keeps it on g.
  ASSERT_TRUE(api.wait_for_admission(std::chrono::seconds(10))) << alloxd->log();
  const testing::Response filter =
      testing::http_request(alloxd->url(), "POST", "/filter",
                            testing::filter_body(make_pod("lab", "p", "nvidia.com/gpu"), {"g"}));
  ASSERT_EQ(200, filter.status) << filter.body;
  ASSERT_EQ(json::array({"g"}), json::parse(filter.body)["NodeNames"]) << filter.body;
  std::thread bind([&] {
    testing::http_request(alloxd->url(), "POST", "/bind",
                          R"({"PodName":"p","PodNamespace":"lab","Node":"g"})");
  });
  ASSERT_TRUE(api.wait_for_binding(std::chrono::seconds(10)));
  Clock::duration took{};
  auto status = terminate(*alloxd, std::chrono::seconds(15), &took);
  bind.join();
  ASSERT_TRUE(status.has_value()) << "alloxd still running 15 s after SIGTERM";
  EXPECT_FALSE(WIFSIGNALED(*status)) << "killed by signal " << WTERMSIG(*status);
  EXPECT_LT(took, std::chrono::seconds(5))
      << std::chrono::duration<double>(took).count() << " s to exit";
}

}  // namespace
}  // namespace allox::extender
