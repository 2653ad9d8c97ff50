// allox bench cluster: alloxd at cluster scale, end to end. A fake Kubernetes API server holds
// `nodes` nodes of `gpus_per_node` GPUs (nvidia.com/gpu) and `cpu_bundles_per_node` CPU bundles;
// the real alloxd binary runs against it (list + watch, gates, events, binding); a
// kube-scheduler v1.28 emulator (manifests/scheduler-config.yaml, urlPrefix pointed at alloxd)
// schedules through alloxd's verbs with NodeNames, and fake kubelets run bound pods.
//
// The workload: `pending` jobs arrive at once, each as a gated GPU pod and a gated CPU pod
// (kubesim/replay.h). Job speeds come from Gavel's measured throughput table
// (sim/synthetic.h): a job's GPU time is its steps over the V100 rate; Gavel has no CPU column,
// so a 32-core CPU bundle is modelled as `cpu_slowdown` times slower than a K80 (a job that does
// not fit a K80 gets no CPU pod). Durations follow sim/synthetic.h's Pareto (median
// `median_duration` simulated seconds on the fastest GPU).
//
// The run ends when every job has been bound, or after `max_wall_s`; alloxd's CPU and API
// requests are read once it has deleted the unused variants too (at most `settle_wall_s`
// later). Measured (wall clock on a shared machine: read the numbers as "under load"):
//   - pods bound per second over every bind (first to last), and while saturated: over the time
//     at least `saturation` pods stood ungated and unbound, waiting for the scheduler and alloxd
//     (scheduler_perf's throughput: what the chain binds while it has work). The first mixes in
//     the policy's pace (AlloX keeps a job queued for a fast machine rather than start it on an
//     idle slow one); the second is the chain's capacity;
//   - completion-to-bind: a machine freed while jobs waited, until the next bind onto it
//     (simulated seconds / speedup = wall);
//   - /filter latency as the scheduler sees it (HTTP round trip), with the NodeNames it sent;
//   - plan time: alloxd's allox_last_solve_seconds at the largest queue it planned;
//   - alloxd's peak RSS (VmHWM) and CPU time, from /proc;
//   - the unused variants' deletions: how many came before the last bind, and how long after
//     their job's release (the tidying keeping pace with the starts, or not).
// Invariants reported, never assumed: jobs bound exactly once, jobs bound twice, jobs unbound.
//
// Not thread-safe; one run at a time (it starts a child process and binds loopback ports).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "bench/proc_cpu.h"
#include "core/result.h"

namespace allox::bench {

struct ClusterBenchOptions {
  std::size_t nodes = 5000;
  std::size_t pending = 50000;  // jobs queued at once; each is a GPU pod and (mostly) a CPU pod
  int gpus_per_node = 8;
  int cpu_bundles_per_node = 2;
  double speedup = 100;           // simulated seconds per wall-clock second
  double median_duration = 1800;  // simulated seconds on the fastest GPU
  double cpu_slowdown = 2;        // a CPU bundle's time / a K80's time
  std::size_t users = 8;
  double max_wall_s = 300;
  // After every job is bound, how long to wait for alloxd to delete the unused variants before
  // its CPU is read.
  double settle_wall_s = 60;
  std::uint64_t seed = 1;
  // alloxd's batch_rounds (alloxd/config.h): every job a round's plan puts first on an idle
  // machine starts at once, instead of the paper's one start per matcher solve.
  bool batch_rounds = false;
  // alloxd's starvation_bound (simulated seconds; 0: the run's horizon, max_wall_s × speedup).
  // alloxd runs `speedup` times faster than the wall, so its default of 3,600 s would have the
  // whole backlog "starved" after 36 wall seconds at 100×, and the policy would run its
  // oldest-first guard instead of the AlloX rounds this bench means to measure.
  double starvation_bound = 0;
  // The emulated cluster's threads (kubesim/cluster_threads.h): normal (equals of
  // alloxd's on the shared cores) or idle (on what alloxd and the kube-scheduler thread leave,
  // as on machines of their own).
  std::string cluster_threads = "normal";
  // alloxd's request_threads (alloxd/http/request_threads.h): normal (alloxd's default), auto or
  // realtime (SCHED_FIFO; a run refused it fails rather than measure something else). The
  // emulated kube-scheduler stays in the normal class either way, as the shipped one does.
  std::string request_threads = "normal";
  // Ungated, unbound pods waiting for the chain to count a moment as saturated.
  std::size_t saturation = 100;
  std::string alloxd_binary;  // required
  std::string scheduler_config = "manifests/scheduler-config.yaml";
  std::string throughputs = "data/gavel/simulation_throughputs.json";
  std::string state_dir = "run/bench-cluster";  // alloxd's config, store and log
};

struct ClusterBenchResult {
  std::size_t nodes = 0, jobs = 0, pods = 0;
  std::size_t bound_once = 0, bound_twice = 0, unbound = 0;
  // Every bind over the span from the first to the last.
  double all_pods_per_second = 0;
  // Binds made while at least `saturation` pods were ungated and unbound, over that time; 0 when
  // the run never had that many waiting.
  std::size_t saturated_binds = 0;
  double saturated_s = 0;
  double saturated_pods_per_second = 0;
  std::size_t completion_to_bind_samples = 0;
  double completion_to_bind_p50_ms = 0, completion_to_bind_p99_ms = 0;  // wall
  std::size_t filter_calls = 0, filter_nodes_max = 0;
  double filter_nodes_mean = 0;
  double filter_p50_ms = 0, filter_p99_ms = 0;
  std::size_t filter_over_2ms = 0;  // calls whose round trip took over 2 ms
  // The same share in each tenth of the calls, in call order: a tail that is a phase of the run
  // (the first plans of 50,000 jobs) reads apart from one spread evenly over it.
  std::array<double, 10> filter_over_2ms_share_by_tenth{};
  // The same, over the calls that carried at least 90% of the nodes.
  std::size_t full_filter_calls = 0;
  double full_filter_p50_ms = 0, full_filter_p99_ms = 0;
  double bind_p50_ms = 0, bind_p99_ms = 0;  // /bind as the scheduler sees it
  // alloxd's own time per /filter (its allox_request_duration_seconds histogram: the request
  // read, until the answer is rendered), against the round trip above: what of the tail is
  // alloxd's handler and what is waiting on the two ends. The p99 is known to a bucket: it lies
  // in (alloxd_filter_p99_above_ms, alloxd_filter_p99_upto_ms].
  std::uint64_t alloxd_filter_calls = 0, alloxd_filter_over_2ms = 0;
  double alloxd_filter_p99_above_ms = 0, alloxd_filter_p99_upto_ms = 0;
  // Of those, the ones that waited for alloxd's watch (allox_filter_watch_wait_seconds): a plan
  // settled them, or the wait ran out (vain); kube-scheduler's cycle stood still meanwhile.
  std::uint64_t watch_waits_settled = 0, watch_waits_vain = 0;
  // The class alloxd's request threads ran in (its allox_request_threads_realtime).
  std::optional<bool> alloxd_request_threads_realtime;
  double watch_wait_seconds = 0;  // both kinds, summed
  double plan_ms = 0;             // the solve at the largest queue seen
  double plan_cpu_ms = 0;         // that solve's CPU on alloxd's planner thread
  std::size_t plan_queued = 0;    // that queue's length
  double alloxd_peak_rss_mb = 0;
  double alloxd_cpu_s = 0;
  // This process's CPU (the fake API server, the scheduler emulator, the kubelets, the replay)
  // from the replay's start to its end: the harness's own cost, beside alloxd's.
  double harness_cpu_s = 0;
  // The same two by thread name (bench/proc_cpu.h): alloxd's live threads over its life, read
  // at the end; the harness's from the replay's start, polled with the plan (its scheduler and
  // kubelets end with the replay). A thread that ended unseen is in the totals only.
  std::map<std::string, ThreadGroupCpu> alloxd_threads, harness_threads;
  // alloxd's requests to the fake API server over the run, by "METHOD resource" (the scheduler
  // emulator and the kubelets write to the store in process, so these are alloxd's alone).
  std::map<std::string, std::uint64_t> api_requests;
  double wall_s = 0;
  // After the last bind: how long until no pod was left unbound (alloxd deleted every started
  // job's unused variants; alloxd's CPU and requests above include that work), and how many
  // were still left when the wait ended (settle_wall_s).
  double settle_s = 0;
  std::size_t left_unbound = 0;
  // Unused variants deleted before the last bind, and how long after their job's release (its
  // gate's removal; wall seconds): whether the tidying keeps pace with the starts or waits
  // behind them.
  std::size_t deleted_in_run = 0;
  double deletion_lag_p50_s = 0, deletion_lag_p99_s = 0;
  bool timed_out = false;
};

// The starvation_bound a run gives alloxd: options.starvation_bound, or the run's horizon.
double effective_starvation_bound(const ClusterBenchOptions& options);

Expected<ClusterBenchResult> run_cluster_bench(const ClusterBenchOptions& options);

}  // namespace allox::bench
