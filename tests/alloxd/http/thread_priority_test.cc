// core/thread_priority.h: a thread's own nice value, class, slice and name, the planner
// thread's, and alloxd's threads as the kernel sees them.
#include "core/thread_priority.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "alloxd/http/http_server.h"
#include "alloxd/plan/planner.h"
#include "kubesim/alloxd_process.h"
#include "tests/alloxd/testing/api_pods.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

TEST(ThreadPriorityTest, NiceChangesOnlyTheCallingThread) {
  const int before = this_thread_nice();
  const int target = before <= 14 ? before + 5 : before - 5;  // 19 is the highest nice value
  int seen = -100;
  std::thread([&] {
    ASSERT_TRUE(set_this_thread_nice(target).ok());
    seen = this_thread_nice();
  }).join();
  EXPECT_EQ(target, seen);
  EXPECT_EQ(before, this_thread_nice());
}

// A round's CPU against its wall time: sleeping costs the thread (almost) nothing; spinning
// costs it, never more than the wall time the spin took. The spin runs until the clock moves,
// so a busy machine makes it longer, not a failure.
TEST(ThreadPriorityTest, AThreadsCpuTimeCountsItsWorkNotItsWaits) {
  const std::optional<double> start = this_thread_cpu_seconds();
  ASSERT_TRUE(start.has_value());
  // Not a wait for anything: the sleep is the thing measured (200 ms of wall, no CPU).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::optional<double> slept = this_thread_cpu_seconds();
  ASSERT_TRUE(slept.has_value());
  EXPECT_LT(*slept - *start, 0.05);
  const auto spin_start = std::chrono::steady_clock::now();
  double cpu = *slept;
  volatile std::uint64_t spins = 0;
  while (cpu - *slept < 0.02 &&
         std::chrono::steady_clock::now() - spin_start < std::chrono::seconds(30)) {
    for (int i = 0; i < 10000; ++i) spins = spins + 1;
    cpu = this_thread_cpu_seconds().value_or(cpu);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - spin_start).count();
  EXPECT_GE(cpu - *slept, 0.02);
  EXPECT_LE(cpu - *slept, wall + 0.002);
}

using std::chrono::microseconds;

// What each of alloxd's named background threads does first: its name, and the batch class
// whatever class the thread that started it had.
TEST(ThreadPriorityTest, ANamedBackgroundThreadRunsInTheBackgroundClass) {
  bool background = false;
  char name[16] = {};
  std::thread([&] {
    ASSERT_FALSE(this_thread_runs_in_background());
    become_background_thread("allox-test");
    background = this_thread_runs_in_background() && !this_thread_runs_when_idle();
    pthread_getname_np(pthread_self(), name, sizeof name);
  }).join();
  EXPECT_TRUE(background);
  EXPECT_STREQ("allox-test", name);
}

TEST(ThreadPriorityTest, ABackgroundThreadKeepsItsNiceValueAndPassesItsClassOn) {
  const int before = this_thread_nice();
  bool background = false, child_background = false;
  int nice = -100;
  std::thread([&] {
    ASSERT_TRUE(set_this_thread_nice(before + 3).ok());
    const Status set = run_this_thread_in_background();
    ASSERT_TRUE(set.ok()) << set.message();
    background = this_thread_runs_in_background();
    nice = this_thread_nice();
    std::thread([&] { child_background = this_thread_runs_in_background(); }).join();
  }).join();
  EXPECT_TRUE(background);
  EXPECT_EQ(before + 3, nice);
  EXPECT_TRUE(child_background) << "a thread started by a background thread is background";
  EXPECT_FALSE(this_thread_runs_in_background()) << "only the calling thread changed";
}

// Linux 6.12+ (this project's machines run 6.18): the slice asked for, within the kernel's
// 0.1-100 ms; zero gives the kernel's default back.
TEST(ThreadPriorityTest, AnInteractiveThreadRunsInTheSliceItAskedFor) {
  std::map<std::string, std::optional<microseconds>> slices;
  bool background = true;
  std::thread([&] {
    ASSERT_TRUE(run_this_thread_in_background().ok());
    const Status set = run_this_thread_interactively(microseconds(300));
    ASSERT_TRUE(set.ok()) << set.message();
    background = this_thread_runs_in_background();
    slices["300"] = this_thread_slice();
    ASSERT_TRUE(run_this_thread_interactively(microseconds(10)).ok());
    slices["10"] = this_thread_slice();
    ASSERT_TRUE(run_this_thread_interactively(microseconds(0)).ok());
    slices["0"] = this_thread_slice();
  }).join();
  EXPECT_FALSE(background);
  EXPECT_EQ(microseconds(300), slices["300"]);
  EXPECT_EQ(microseconds(100), slices["10"]) << "the kernel's shortest slice";
  ASSERT_TRUE(slices["0"].has_value());
  EXPECT_NE(microseconds(300), *slices["0"]);
  EXPECT_NE(microseconds(100), *slices["0"]);
}

// A server started from a background thread (alloxd's main thread) still answers from
// interactive threads.
TEST(ThreadPriorityTest, TheHttpServersThreadsAnswerInteractively) {
  std::atomic<bool> served_in_background{true};
  HttpHandler handler;
  handler.serve = [&](const HttpRequest&) {
    served_in_background = this_thread_runs_in_background();
    return HttpReply{200, "text/plain", "ok\n"};
  };
  std::unique_ptr<HttpServer> server;
  std::thread([&] {
    ASSERT_TRUE(run_this_thread_in_background().ok());
    HttpServerOptions options;
    options.port = 0;
    auto started = HttpServer::start(std::move(handler), options);
    ASSERT_TRUE(started.ok()) << started.message();
    server = std::move(*started);
  }).join();
  ASSERT_TRUE(server);
  auto answer = testing::http_request(server->url(), "GET", "/x");
  EXPECT_EQ(200, answer.status);
  EXPECT_FALSE(served_in_background.load());
}

// Real-time needs CAP_SYS_NICE: granted (CI runs as root), the thread is SCHED_FIFO and can be
// made normal again; refused, the error says what is missing and the thread keeps its class.
TEST(ThreadPriorityTest, ARealTimeThreadIsGrantedOrRefusedWithTheReason) {
  std::thread([] {
    ASSERT_FALSE(this_thread_runs_in_realtime());
    Status granted = run_this_thread_in_realtime();
    if (granted) {
      EXPECT_TRUE(this_thread_runs_in_realtime());
      ASSERT_TRUE(run_this_thread_interactively(microseconds(0)).ok());
      EXPECT_FALSE(this_thread_runs_in_realtime());
    } else {
      EXPECT_NE(std::string::npos, granted.message().find("CAP_SYS_NICE")) << granted.message();
      EXPECT_FALSE(this_thread_runs_in_realtime());
    }
    Status out_of_range = run_this_thread_in_realtime(100);
    ASSERT_FALSE(out_of_range.ok());
    EXPECT_NE(std::string::npos, out_of_range.message().find("1..99")) << out_of_range.message();
  }).join();
}

// The request class is process-wide: with kRealtime a thread entering it runs SCHED_FIFO, with
// kNormal interactively (SCHED_NORMAL), even when started from a background thread.
TEST(ThreadPriorityTest, TheRequestClassDecidesHowARequestThreadRuns) {
  const bool granted = realtime_granted().ok();
  std::thread([] {
    ASSERT_TRUE(run_this_thread_in_background().ok());
    ASSERT_TRUE(enter_request_class().ok());
    EXPECT_FALSE(this_thread_runs_in_realtime());
    EXPECT_FALSE(this_thread_runs_in_background());
  }).join();
  if (!granted) GTEST_FAIL() << "this machine grants no real-time class (CAP_SYS_NICE)";
  set_request_class(RequestClass::kRealtime);
  std::thread([] {
    EXPECT_TRUE(enter_request_class().ok());
    EXPECT_TRUE(this_thread_runs_in_realtime());
  }).join();
  set_request_class(RequestClass::kNormal);
}

TEST(ThreadPriorityTest, AnOutOfRangeNiceIsAnErrorNamingIt) {
  const Status refused = set_this_thread_nice(42);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.message().find("nice must be in -20..19, got 42"));
}

// The nice value (field 19 of /proc/self/task/TID/stat) of this process's thread named `name`;
// -100 when there is none.
int nice_of_thread_named(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string seen;
    std::getline(comm, seen);
    if (seen != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // After "(comm)", fields 3.. are space separated; nice is field 19.
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i) {
    }
    return std::stoi(field);
  }
  return -100;
}

TEST(ThreadPriorityTest, ThePlannerThreadRunsBehindTheRequestThreads) {
  // The thread names itself and lowers its nice before its first plan: read it once that plan
  // is published (the listener runs on the planner thread, after the plan). Declared before
  // the planner, so they outlive its thread.
  std::promise<void> planned;
  std::atomic<bool> said{false};
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config({{"g1", {{"gpu", 1}}}}, dir.file("state.db"));
  Metrics metrics;
  PlannerOptions options;
  options.inventory = config.nodes;  // so the thread publishes a plan
  auto planner =
      Planner::create(config, make_policy("fifo", PolicyOptions{}).value(), metrics, options);
  ASSERT_TRUE(planner.ok()) << planner.message();
  (*planner)->set_plan_listener([&] {
    if (!said.exchange(true)) planned.set_value();
  });
  (*planner)->start();
  ASSERT_EQ(std::future_status::ready, planned.get_future().wait_for(std::chrono::seconds(10)));
  // Lowered to 10, never raised (a process already at 15 stays at 15).
  EXPECT_EQ(std::max(this_thread_nice(), 10), nice_of_thread_named("allox-planner"));
  (*planner)->stop();
}

// The kernel's view of a thread of another process: its policy and slice (sched_getattr by id).
struct KernelThread {
  std::uint32_t policy = 99;
  std::uint64_t slice_ns = 0;
};

// alloxd's threads by name (several of one name: the last one read; all are checked below).
std::multimap<std::string, KernelThread> threads_of(int pid) {
  struct Attr {
    std::uint32_t size, policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime, deadline, period;
    std::uint32_t util_min, util_max;
  };
  std::multimap<std::string, KernelThread> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    Attr attr{};
    attr.size = sizeof(attr);
    const long tid = std::stol(task.path().filename().string());
    if (syscall(SYS_sched_getattr, tid, &attr, sizeof(attr), 0) != 0) continue;
    out.emplace(name, KernelThread{attr.policy, attr.runtime});
  }
  return out;
}


// The kernel's policy numbers as sched_getattr reports them.
constexpr std::uint32_t kNormal = 0, kFifo = 1, kBatch = 3;

// A one-node alloxd config with `setting` (one line of YAML) in dir; its path.
std::string one_node_config(testing::ScratchDir& dir, const std::string& setting) {
  const std::string config = dir.file("alloxd.yaml");
  std::ofstream out(config);
  out << "policy: fifo\ntick: 0.2\nadmin_token: t\n"
      << setting << "\nnodes:\n  - {name: n1, machines: {gpu: 8}}\n";
  return config;
}

TEST(ThreadPriorityTest, AlloxdRunsItsWorkInTheBackgroundAndAnswersInteractively) {
  testing::ScratchDir dir;
  const std::string config =
      one_node_config(dir, "request_threads: normal");
  auto alloxd = testing::start_alloxd_binary(config, dir.file("state.db"));
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  // Read once: start_alloxd_binary returned on alloxd's 'ready' and 'listening' lines, and by
  // then every thread runs named and in its class (each start-up returns only then; the
  // planner's thread before its first plan).
  const auto threads = threads_of((*alloxd)->pid());
  std::size_t http = 0, background = 0;
  for (const auto& [name, thread] : threads) {
    if (name == "allox-http") {
      ++http;
      EXPECT_EQ(kNormal, thread.policy) << name;
    } else {  // the main thread, the planner, the store's, the blocking pool (/bind)
      ++background;
      EXPECT_EQ(kBatch, thread.policy) << name;
    }
  }
  EXPECT_EQ(4u, http) << "http_threads' default";
  EXPECT_GE(background, 3u);
  EXPECT_EQ(1u, threads.count("allox-planner"));
  EXPECT_EQ(16u, threads.count("allox-blocking")) << "each of the /bind pool's threads named";
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// request_threads: realtime puts kube-scheduler's listener's threads in SCHED_FIFO; the reports listener (tenants reach it) stays normal, the background batch.
TEST(ThreadPriorityTest, AlloxdWithRealtimeRequestThreadsAnswersKubeSchedulerFirst) {
  testing::ScratchDir dir;
  const std::string config =
      one_node_config(dir, "request_threads: realtime\nreports_listen: 127.0.0.1:0");
  auto alloxd = testing::start_alloxd_binary(config, dir.file("state.db"));
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  const auto threads = threads_of((*alloxd)->pid());  // ready and listening: all in their class
  std::size_t realtime = 0, normal_http = 0;
  for (const auto& [name, thread] : threads) {
    if (name == "allox-http" && thread.policy == kNormal) {
      ++normal_http;  // the reports listener's one thread
    } else if (name == "allox-http") {
      ++realtime;
      EXPECT_EQ(kFifo, thread.policy) << name << " (this test needs CAP_SYS_NICE, as CI has)";
    } else {
      EXPECT_EQ(kBatch, thread.policy) << name;
    }
  }
  EXPECT_EQ(4u, realtime) << "kube-scheduler's listener's 4 threads";
  EXPECT_EQ(1u, normal_http) << "the reports listener's thread";
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// How many of alloxd's request threads (kube-scheduler's listener's) run real-time and how many normal (alloxd ready and listening: every thread in its class).
struct RequestThreadClasses {
  std::size_t realtime = 0, normal = 0;
};
RequestThreadClasses request_thread_classes(int pid) {
  const auto threads = threads_of(pid);
  RequestThreadClasses classes;
  for (const auto& [name, thread] : threads) {
    if (name != "allox-http") continue;
    (thread.policy == kFifo ? classes.realtime : classes.normal) += 1;
  }
  return classes;
}

// alloxd's own word for its class: the allox_request_threads_realtime gauge.
std::string realtime_gauge(const std::string& url) {
  const testing::Response metrics = testing::http_request(url, "GET", "/metrics");
  const auto at = metrics.body.find("\nallox_request_threads_realtime ");
  if (at == std::string::npos) return "absent";
  return metrics.body.substr(at + 32, 1);
}

// kube-scheduler's listener's 4 threads all normal, as the gauge says.
void expect_request_threads_normal(emulator::AlloxdProcess& alloxd) {
  const RequestThreadClasses classes = request_thread_classes(alloxd.pid());
  EXPECT_EQ(0u, classes.realtime);
  EXPECT_EQ(4u, classes.normal);
  EXPECT_EQ("0", realtime_gauge(alloxd.url()));
}

emulator::AlloxdLaunch launch_of(const std::string& config, const std::string& database) {
  emulator::AlloxdLaunch launch;
  launch.binary = ALLOX_BINARY_DIR "/cli/alloxd";
  launch.config = config;
  launch.database = database;
  return launch;
}

// The default (request_threads: normal) even where the kernel grants real-time (CI runs as
// root): kube-scheduler's listener's 4 threads stay normal, and alloxd
// says so in its log and its metrics.
TEST(ThreadPriorityTest, AlloxdByDefaultAnswersKubeSchedulerInTheNormalClassEvenWhereGranted) {
  ASSERT_TRUE(realtime_granted().ok()) << "this test needs CAP_SYS_NICE, as CI has";
  testing::ScratchDir dir;
  auto alloxd = testing::start_alloxd_binary(one_node_config(dir, ""), dir.file("state.db"));
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  expect_request_threads_normal(**alloxd);
  EXPECT_NE(std::string::npos, (*alloxd)->log().find("request_threads: normal")) << (*alloxd)->log();
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// The operator's opt-in (request_threads: auto) where the kernel grants real-time and
// kube-scheduler's listener is on loopback: its 4 threads run SCHED_FIFO,
// and alloxd says so in its log and its metrics.
TEST(ThreadPriorityTest, AlloxdWithAutoAnswersKubeSchedulerInRealTimeWhereGranted) {
  ASSERT_TRUE(realtime_granted().ok()) << "this test needs CAP_SYS_NICE, as CI has";
  testing::ScratchDir dir;
  auto alloxd = testing::start_alloxd_binary(one_node_config(dir, "request_threads: auto"),
                                             dir.file("state.db"));
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  const RequestThreadClasses classes = request_thread_classes((*alloxd)->pid());
  EXPECT_EQ(4u, classes.realtime);
  EXPECT_EQ(0u, classes.normal);
  EXPECT_EQ("1", realtime_gauge((*alloxd)->url()));
  EXPECT_NE(std::string::npos, (*alloxd)->log().find("real-time granted, the extender listener "
                                                     "on loopback"))
      << (*alloxd)->log();
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// auto without CAP_SYS_NICE (alloxd started under setpriv with the capability out of its
// bounding set, as in a container that was not granted it): normal, and the log says why.
TEST(ThreadPriorityTest, AlloxdWithAutoAnswersInTheNormalClassWithoutCapSysNice) {
  testing::ScratchDir dir;
  emulator::AlloxdLaunch launch =
      launch_of(one_node_config(dir, "request_threads: auto"), dir.file("state.db"));
  launch.launcher = {"/usr/bin/setpriv", "--bounding-set=-sys_nice", "--"};
  auto alloxd = emulator::AlloxdProcess::start(launch);
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  expect_request_threads_normal(**alloxd);
  const std::string log = (*alloxd)->log();
  EXPECT_NE(std::string::npos, log.find("request_threads: auto: ")) << log;
  EXPECT_NE(std::string::npos, log.find("CAP_SYS_NICE")) << log;
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// auto on a listener other hosts can reach: normal even where real-time is granted, so no
// remote client can make real-time threads run.
TEST(ThreadPriorityTest, AlloxdWithAutoAnswersAListenerOffLoopbackInTheNormalClass) {
  testing::ScratchDir dir;
  emulator::AlloxdLaunch launch =
      launch_of(one_node_config(dir, "request_threads: auto"), dir.file("state.db"));
  launch.listen = "0.0.0.0:0";
  auto alloxd = emulator::AlloxdProcess::start(launch);
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  expect_request_threads_normal(**alloxd);
  EXPECT_NE(std::string::npos, (*alloxd)->log().find("is not on loopback")) << (*alloxd)->log();
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// manifests/realtime/ as the kernel sees it: uid 0 holding SYS_NICE and no other capability,
// and --request-threads auto on the command line: the request threads run SCHED_FIFO.
TEST(ThreadPriorityTest, TheRealtimeOverlaysOneCapabilityTakesEffectForUidZero) {
  ASSERT_TRUE(realtime_granted().ok()) << "this test needs CAP_SYS_NICE, as CI has";
  testing::ScratchDir dir;
  emulator::AlloxdLaunch launch = launch_of(one_node_config(dir, ""), dir.file("state.db"));
  launch.launcher = {"/usr/bin/setpriv", "--reuid=0", "--inh-caps=-all",
                     "--bounding-set=-all,+sys_nice", "--"};
  launch.extra_args = {"--request-threads", "auto"};
  auto alloxd = emulator::AlloxdProcess::start(launch);
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  const RequestThreadClasses classes = request_thread_classes((*alloxd)->pid());
  EXPECT_EQ(4u, classes.realtime) << (*alloxd)->log();
  EXPECT_EQ("1", realtime_gauge((*alloxd)->url()));
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// The same grant for the image's own user (uid 10001) does not take effect: without ambient
// capabilities a non-root process holds SYS_NICE in its bounding set only, so alloxd falls back
// to normal and says why. This is why the overlay runs alloxd as uid 0.
TEST(ThreadPriorityTest, SysNiceForTheImagesUserDoesNotTakeEffect) {
  testing::ScratchDir dir;
  ASSERT_EQ(0, ::chmod(dir.path().c_str(), 0777));
  emulator::AlloxdLaunch launch = launch_of(one_node_config(dir, ""), dir.file("state.db"));
  launch.launcher = {"/usr/bin/setpriv", "--reuid=10001", "--regid=10001", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all,+sys_nice", "--"};
  launch.extra_args = {"--request-threads", "auto"};
  auto alloxd = emulator::AlloxdProcess::start(launch);
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  expect_request_threads_normal(**alloxd);
  EXPECT_NE(std::string::npos, (*alloxd)->log().find("CAP_SYS_NICE")) << (*alloxd)->log();
  (*alloxd)->terminate(std::chrono::seconds(10));
}

// alloxd as the shipped config runs it (manifests/alloxd.yaml: an API server, the Lease, the
// reports listener and the TLS webhook listener) starts the threads docs/design.md counts,
// "Threads": one blocking pool for the process, none for the webhook, whose handler never blocks.
TEST(ThreadPriorityTest, AlloxdWithTheShippedShapeOfConfigRunsItsDocumentedThreads) {
  constexpr std::size_t kDocumented = 33;
  emulator::FakeApiServer api(testing::api_options("api-token"));
  api.add_node("n1", {{"cpu", "64"}, {"nvidia.com/gpu", "4"}});
  testing::ScratchDir dir;
  testing::write_self_signed(dir.file("tls.crt"), dir.file("tls.key"));
  const std::string config = dir.file("alloxd.yaml");
  {
    std::ofstream out(config);
    out << "policy: allox\ntick: 5\nadmin_token: t\nreports_listen: 127.0.0.1:0\n"
        << "apiserver: {url: '" << api.url() << "', token: api-token,"
        << " lease: {namespace: allox-system, name: alloxd}}\n"
        << "webhook: {listen: '127.0.0.1:0', tls_cert_file: " << dir.file("tls.crt")
        << ", tls_key_file: " << dir.file("tls.key") << "}\n";
  }
  auto alloxd = testing::start_alloxd_binary(config, dir.file("state.db"));
  ASSERT_TRUE(alloxd.ok()) << alloxd.message();
  // Read once alloxd is ready (the watch listed) and listening: every thread runs by then.
  const auto threads = threads_of((*alloxd)->pid());
  std::map<std::string, std::size_t> by_name;
  for (const auto& [name, thread] : threads) ++by_name[name];
  std::string seen;
  for (const auto& [name, count] : by_name) seen += name + " x" + std::to_string(count) + "\n";
  EXPECT_EQ(kDocumented, threads.size()) << seen;
  EXPECT_EQ(16u, by_name["allox-blocking"]) << "one pool for the process\n" << seen;
  EXPECT_EQ(6u, by_name["allox-http"]) << "4 for kube-scheduler, 1 reports, 1 webhook\n" << seen;
  (*alloxd)->terminate(std::chrono::seconds(10));
}

}  // namespace
}  // namespace allox::extender
