#include "bench/cluster_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "alloxd/http/request_threads.h"
#include "alloxd/web/metrics.h"
#include "bench/bench_alloxd.h"
#include "bench/proc_cpu.h"
#include "core/thread_priority.h"
#include "extender_api/extender_client.h"
#include "kubesim/alloxd_process.h"
#include "kubesim/cluster_threads.h"
#include "kubesim/fake_api_server.h"
#include "kubesim/replay.h"
#include "kubesim/scheduler_config.h"
#include "profiler/throughput_table.h"
#include "sim/synthetic.h"

namespace allox::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The value of an unlabelled sample in Prometheus text ("name 12.5"); nullopt when absent.
std::optional<double> sample(const std::string& text, const std::string& name) {
  const std::string prefix = "\n" + name + " ";
  auto at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  try {
    return std::stod(text.substr(at + prefix.size(), 32));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A /proc/<pid>/status field in kB ("VmHWM"), 0 when unreadable.
double status_kb(int pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  }
  return 0;
}

// alloxd's own /filter histogram, read from its /metrics once the replay is over.
void read_alloxd_filter_time(const std::string& url, ClusterBenchResult& result) {
  extender::ExtenderClient client(url, "", std::chrono::seconds(5));
  auto text = client.get_text("/metrics");
  if (!text) return;
  const std::vector<extender::HistogramBucket> buckets =
      extender::read_histogram(*text, "allox_request_duration_seconds", "verb=\"filter\"");
  for (const bool settled : {true, false}) {
    const std::string labels = settled ? "outcome=\"settled\"" : "outcome=\"vain\"";
    const auto waits = extender::read_histogram(*text, "allox_filter_watch_wait_seconds", labels);
    if (waits.empty()) continue;
    (settled ? result.watch_waits_settled : result.watch_waits_vain) = waits.back().cumulative;
    result.watch_wait_seconds +=
        sample(*text, "allox_filter_watch_wait_seconds_sum{" + labels + "}").value_or(0);
  }
  if (auto realtime = sample(*text, "allox_request_threads_realtime")) {
    result.alloxd_request_threads_realtime = *realtime == 1;
  }
  if (buckets.empty() || buckets.back().cumulative == 0) return;
  const std::uint64_t calls = buckets.back().cumulative;
  result.alloxd_filter_calls = calls;
  double below = 0;
  bool p99_found = false;
  for (const extender::HistogramBucket& b : buckets) {
    if (b.upper_bound == 0.002) result.alloxd_filter_over_2ms = calls - b.cumulative;
    if (!p99_found && static_cast<double>(b.cumulative) >= 0.99 * static_cast<double>(calls)) {
      result.alloxd_filter_p99_above_ms = below * 1000;
      result.alloxd_filter_p99_upto_ms = b.upper_bound * 1000;
      p99_found = true;
    }
    below = b.upper_bound;
  }
}

// Gavel job types as GPU and CPU pods (the header says how).
Expected<std::vector<emulator::ReplayJob>> workload(const ClusterBenchOptions& options) {
  auto table = ThroughputTable::load_gavel(options.throughputs);
  if (!table) return table.error();
  SyntheticOptions synthetic;
  synthetic.jobs = options.pending;
  synthetic.users = options.users;
  synthetic.median_duration = options.median_duration;
  synthetic.seed = options.seed;
  auto trace = generate_synthetic_trace(*table, synthetic);
  if (!trace) return trace.error();
  auto as_pods = [&](const std::map<DeviceType, double>& gavel) {
    std::map<DeviceType, double> out;
    auto v100 = gavel.find("v100");
    if (v100 != gavel.end()) {
      out["gpu"] = v100->second;
    } else {
      out["gpu"] = std::min_element(gavel.begin(), gavel.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                   })->second;
    }
    if (auto k80 = gavel.find("k80"); k80 != gavel.end()) {
      out["cpu"] = k80->second * options.cpu_slowdown;
    }
    return out;
  };
  std::vector<emulator::ReplayJob> jobs;
  jobs.reserve(trace->jobs.size());
  for (const TraceJob& t : trace->jobs) {
    // Every job is queued at once: the backlog is the scenario.
    jobs.push_back({t.job.id, t.job.user, 0, as_pods(t.job.time), as_pods(t.true_time)});
  }
  return jobs;
}

Status write_alloxd_config(const std::string& path, const ClusterBenchOptions& options) {
  std::ofstream out(path);
  out << "# written by allox bench cluster\n"
         "listen: 127.0.0.1:0\n"
         "database: alloxd.db\n"
         "policy: allox\n"
         "alpha: 0.5\n"
      << "batch_rounds: " << (options.batch_rounds ? "true" : "false") << "\n"
      << "starvation_bound: " << std::to_string(effective_starvation_bound(options)) << "\n"
      << "request_threads: " << options.request_threads << "\n"
      << "tick: 2\n"
         "default_job_seconds: 3600\n"
         "admin_token: bench-cluster\n"
         "scheduler_name: allox-scheduler\n"
         "devices:\n"
         "  - {resource: nvidia.com/gpu, device: gpu}\n"
         "cpu: {device: cpu, cores_per_machine: 32}\n"
         "tenancy: {user_annotation_namespaces: [bench]}\n"
         "retention: {finished_seconds: 86400}\n"
         "log: {level: info, format: text}\n";  // AlloxdProcess reads the address from it
  if (!out) return Error{"cannot write " + path};
  return OkStatus();
}

// Pods of `pod_namespace` no node holds: once every job is bound, the unused variants alloxd
// has yet to delete.
std::size_t unbound_pods(emulator::ApiObjects& objects, const std::string& pod_namespace) {
  std::size_t unbound = 0;
  for (const emulator::ObjectPtr& pod : objects.objects(emulator::pods_resource())) {
    const nlohmann::json& meta = (*pod)["metadata"];
    if (meta.value("namespace", "") != pod_namespace) continue;
    if ((*pod)["spec"].value("nodeName", "").empty()) ++unbound;
  }
  return unbound;
}

}  // namespace

double effective_starvation_bound(const ClusterBenchOptions& options) {
  return options.starvation_bound > 0 ? options.starvation_bound
                                      : options.max_wall_s * options.speedup;
}

Expected<ClusterBenchResult> run_cluster_bench(const ClusterBenchOptions& options) {
  if (options.nodes == 0 || options.pending == 0) {
    return Error{"bench cluster: --nodes and --pending must be positive"};
  }
  if (options.alloxd_binary.empty()) return Error{"bench cluster: no alloxd binary"};
  if (options.cluster_threads != "normal" && options.cluster_threads != "idle") {
    return Error{"bench cluster: cluster_threads must be normal or idle, not '" +
                 options.cluster_threads + "'"};
  }
  const auto request_threads = extender::parse_request_threads(options.request_threads);
  if (!request_threads) {
    return Error{"bench cluster: request_threads must be " + request_threads.message() + ", not '" +
                 options.request_threads + "'"};
  }
  const Status granted = allox::realtime_granted();
  if (*request_threads == extender::RequestThreads::kRealtime && !granted) {
    // A machine without CAP_SYS_NICE fails the run with the reason, rather than measuring the
    // normal class under the realtime label.
    return Error{"bench cluster: --request-threads realtime: " + granted.message()};
  }
  emulator::set_cluster_threads(options.cluster_threads == "idle"
                                    ? emulator::ClusterThreads::kIdle
                                    : emulator::ClusterThreads::kNormal);
  auto jobs = workload(options);
  if (!jobs) return jobs.error();
  auto scheduler = emulator::load_scheduler_configuration(options.scheduler_config);
  if (!scheduler) return scheduler.error();
  if (scheduler->extenders.empty()) return Error{options.scheduler_config + ": no extender"};

  ClusterBenchResult result;
  result.nodes = options.nodes;
  result.jobs = jobs->size();
  for (const auto& job : *jobs) result.pods += job.true_time.size();

  emulator::ReplayOptions replay;
  replay.scheduler = *scheduler;
  replay.scheduler_name = scheduler->scheduler_names.front();
  replay.pod_namespace = "bench";
  replay.resource_of["gpu"] = "nvidia.com/gpu";
  replay.cpu_cores = 32;
  replay.gated = true;

  emulator::SimClock clock(options.speedup);
  emulator::FakeApiServerOptions api_options;
  api_options.token = "bench-" + std::to_string(::getpid());
  api_options.clock = [&clock] { return clock.now(); };
  auto api = emulator::FakeApiServer::start(api_options);
  if (!api) return Error{"fake API server: " + api.message()};
  const auto allocatable = emulator::node_allocatable(
      {{"gpu", options.gpus_per_node}, {"cpu", options.cpu_bundles_per_node}}, replay);
  for (std::size_t n = 0; n < options.nodes; ++n) {
    (*api)->add_node("node-" + std::to_string(n), allocatable);
  }

  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  const std::string base_config = options.state_dir + "/base.yaml";
  if (Status written = write_alloxd_config(base_config, options); !written) return written.error();
  auto alloxd = start_bench_alloxd({.binary = options.alloxd_binary,
                                    .state_dir = options.state_dir,
                                    .config = base_config,
                                    .apiserver_url = (*api)->url(),
                                    .apiserver_token = api_options.token,
                                    .time_scale = options.speedup});
  if (!alloxd) return alloxd.error();
  for (auto& e : replay.scheduler.extenders) e.url_prefix = (*alloxd)->url();

  // Plan time: poll alloxd's gauges; keep the solve seen at the largest queue.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  // The harness's CPU from here, in all and by thread name (polled: the replay's own threads
  // end before it returns).
  const double harness_cpu_start = process_cpu_seconds(::getpid());
  const auto harness_threads_start = cpu_by_thread_name(::getpid());
  auto harness_threads_seen = harness_threads_start;
  std::thread poller([&] {
    emulator::become_cluster_thread("bench-poller");
    extender::ExtenderClient metrics((*alloxd)->url(), "", std::chrono::seconds(5));
    std::unique_lock lock(mu);
    while (!finished) {
      lock.unlock();
      auto text_or = metrics.get_text("/metrics");
      const std::string text = text_or ? *text_or : "";
      auto queued = sample(text, "allox_queue_length");
      auto solve = sample(text, "allox_last_solve_seconds");
      auto solve_cpu = sample(text, "allox_last_solve_cpu_seconds");
      const auto harness_threads = cpu_by_thread_name(::getpid());
      lock.lock();
      keep_largest(harness_threads_seen, harness_threads);
      if (queued && solve && *queued >= static_cast<double>(result.plan_queued)) {
        if (*queued > static_cast<double>(result.plan_queued)) result.plan_ms = 0;
        result.plan_queued = static_cast<std::size_t>(*queued);
        if (*solve * 1000 >= result.plan_ms) {
          result.plan_ms = *solve * 1000;
          result.plan_cpu_ms = solve_cpu ? *solve_cpu * 1000 : 0;
        }
      }
      cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished; });
    }
  });

  const auto wall_start = Clock::now();
  std::vector<double> bind_at;  // wall seconds of every bind
  // Pods ungated and not yet bound (nor deleted): the work waiting for the scheduler and alloxd.
  std::unordered_set<std::string> waiting;
  double last_event_at = 0;
  std::size_t jobs_bound = 0;
  std::map<std::string, int> binds_of;
  std::unordered_map<std::string, double> released_at;  // job -> its first gate removal, wall s
  std::vector<double> deletion_lag_s;  // an unused variant's deletion after its job's release
  replay.record_events = true;
  replay.stop = &stop;
  replay.on_event = [&](const emulator::ReplayEvent& e) {
    const double at = seconds_since(wall_start);
    const bool saturated = waiting.size() >= options.saturation;
    if (saturated) result.saturated_s += at - last_event_at;
    last_event_at = at;
    using Kind = emulator::ReplayEvent::Kind;
    if (e.kind == Kind::kGateRemoved) {
      waiting.insert(e.pod);
      released_at.emplace(e.job, at);
    }
    if (e.kind == Kind::kDeleted) {
      waiting.erase(e.pod);
      auto released = released_at.find(e.job);
      deletion_lag_s.push_back(released == released_at.end() ? 0 : at - released->second);
    }
    if (e.kind == Kind::kBound) {
      waiting.erase(e.pod);
      if (saturated) ++result.saturated_binds;
      bind_at.push_back(at);
      if (++binds_of[e.job] == 1) ++jobs_bound;
      if (jobs_bound == result.jobs) stop = true;
    }
    if (at > options.max_wall_s) {
      result.timed_out = true;
      stop = true;
    }
  };
  std::thread watchdog([&] {
    emulator::become_cluster_thread("bench-watchdog");
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::duration<double>(options.max_wall_s),
                     [&] { return finished; })) {
      result.timed_out = true;
      stop = true;
    }
  });
  auto summary = emulator::replay_jobs((*api)->objects(), clock, *jobs, replay);
  result.wall_s = seconds_since(wall_start);
  result.harness_cpu_s = process_cpu_seconds(::getpid()) - harness_cpu_start;
  // alloxd's CPU counts the work its binds leave (the started jobs' unused variants deleted):
  // read once no pod is left unbound, or after `settle_wall_s`.
  const auto settle_start = Clock::now();
  while (!result.timed_out) {
    result.left_unbound = unbound_pods((*api)->objects(), replay.pod_namespace);
    if (result.left_unbound == 0 || seconds_since(settle_start) > options.settle_wall_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  result.settle_s = seconds_since(settle_start);
  result.alloxd_cpu_s = process_cpu_seconds((*alloxd)->pid());
  result.alloxd_threads = cpu_by_thread_name((*alloxd)->pid());
  result.alloxd_peak_rss_mb = status_kb((*alloxd)->pid(), "VmHWM") / 1024;
  {
    std::lock_guard lock(mu);
    finished = true;
    keep_largest(harness_threads_seen, cpu_by_thread_name(::getpid()));
    result.harness_threads = cpu_between(harness_threads_start, harness_threads_seen);
  }
  cv.notify_all();
  poller.join();
  watchdog.join();
  read_alloxd_filter_time((*alloxd)->url(), result);
  (*alloxd)->stop();
  result.api_requests = (*api)->requests_by_kind();
  (*api)->stop();
  if (!summary) return summary.error();

  for (const auto& job : summary->jobs) {
    if (job.runs == 0) ++result.unbound;
    if (job.runs == 1) ++result.bound_once;
    if (job.runs > 1) ++result.bound_twice;
  }
  if (result.saturated_s > 0) {
    result.saturated_pods_per_second =
        static_cast<double>(result.saturated_binds) / result.saturated_s;
  }
  if (bind_at.size() > 1) {
    const auto [first, last] = std::minmax_element(bind_at.begin(), bind_at.end());
    result.all_pods_per_second =
        static_cast<double>(bind_at.size() - 1) / std::max(1e-9, *last - *first);
  }
  std::vector<double> c2b_ms;
  for (double s : summary->completion_to_bind) c2b_ms.push_back(s / options.speedup * 1000);
  result.completion_to_bind_samples = c2b_ms.size();
  result.deleted_in_run = deletion_lag_s.size();
  result.deletion_lag_p50_s = emulator::quantile(deletion_lag_s, 0.5);
  result.deletion_lag_p99_s = emulator::quantile(deletion_lag_s, 0.99);
  result.completion_to_bind_p50_ms = emulator::quantile(c2b_ms, 0.5);
  result.completion_to_bind_p99_ms = emulator::quantile(c2b_ms, 0.99);

  const auto& stats = summary->scheduler;
  std::vector<double> all_ms, full_ms;
  double nodes_sum = 0;
  for (std::size_t i = 0; i < stats.filter_seconds.size(); ++i) {
    const std::size_t sent = i < stats.filter_nodes.size() ? stats.filter_nodes[i] : 0;
    all_ms.push_back(stats.filter_seconds[i] * 1000);
    if (all_ms.back() > 2) ++result.filter_over_2ms;
    if (sent * 10 >= options.nodes * 9) full_ms.push_back(stats.filter_seconds[i] * 1000);
    nodes_sum += static_cast<double>(sent);
    result.filter_nodes_max = std::max(result.filter_nodes_max, sent);
  }
  result.filter_calls = all_ms.size();
  for (std::size_t tenth = 0; tenth < 10 && !all_ms.empty(); ++tenth) {
    const std::size_t begin = all_ms.size() * tenth / 10, end = all_ms.size() * (tenth + 1) / 10;
    const auto over = std::count_if(all_ms.begin() + static_cast<std::ptrdiff_t>(begin),
                                    all_ms.begin() + static_cast<std::ptrdiff_t>(end),
                                    [](double ms) { return ms > 2; });
    result.filter_over_2ms_share_by_tenth[tenth] =
        end > begin ? static_cast<double>(over) / static_cast<double>(end - begin) : 0;
  }
  result.filter_nodes_mean = all_ms.empty() ? 0 : nodes_sum / static_cast<double>(all_ms.size());
  result.filter_p50_ms = emulator::quantile(all_ms, 0.5);
  result.filter_p99_ms = emulator::quantile(all_ms, 0.99);
  std::vector<double> bind_ms;
  for (double seconds : stats.bind_seconds) bind_ms.push_back(seconds * 1000);
  result.bind_p50_ms = emulator::quantile(bind_ms, 0.5);
  result.bind_p99_ms = emulator::quantile(bind_ms, 0.99);
  result.full_filter_calls = full_ms.size();
  result.full_filter_p50_ms = emulator::quantile(full_ms, 0.5);
  result.full_filter_p99_ms = emulator::quantile(full_ms, 0.99);
  return result;
}

}  // namespace allox::bench
