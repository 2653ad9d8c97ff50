// The scheduling-policy contract shared by the simulator (sim/) and the extender (alloxd/).
//
// A policy sees a snapshot of the cluster (ClusterState) and says which queued jobs start now on
// which idle machines, and, for preemptive policies, which running jobs to stop. It never mutates
// the snapshot; the caller applies the Decision and calls decide() again at the next event
// (arrival, completion, periodic tick). Times are seconds on the caller's clock.
//
// Processing times in the snapshot are the caller's *estimates* (profiler output, or a trace's
// estimate with its error); a policy never sees true times. For a running or preempted job,
// QueuedJob::remaining is what is left of the estimate.
//
// Policies are stateful where their definition needs history (LAS attained service, windowed
// usage), so keep one instance per simulation or server. Not thread-safe: one caller at a time.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "fairness/drf_share.h"

namespace allox {

struct QueuedJob {
  const Job* job = nullptr;     // estimated processing time per device in job->time
  double queued_since = 0;      // arrival (or the time it became schedulable after profiling)
  double attained_service = 0;  // seconds already run (preemptive policies), 0 otherwise
  // Remaining estimated time per device for a job that already ran (preempted); empty means
  // job->time in full.
  std::map<DeviceType, double> remaining;
};

struct RunningJob {
  const Job* job = nullptr;
  std::size_t machine = 0;  // index into ClusterState::machines (the lowest of a job's units)
  double start = 0;
  double estimated_finish = 0;
  double attained_service = 0;  // seconds run up to now, earlier runs and this one
  // A job of k > 1 units (Job::units) also holds these k − 1 machines of the same node.
  std::vector<std::size_t> other_machines{};
};

struct ClusterState {
  double now = 0;
  std::vector<Machine> machines;  // busy_until = estimated finish for a busy machine
  std::vector<bool> idle;         // idle[i]: machine i can start a job now
  std::vector<QueuedJob> queue;
  std::vector<RunningJob> running;
  std::vector<User> users;  // weights; users absent here have weight 1
};

// A job of k units (Job::units) runs on the k lowest-index machines of `machine`'s node that are
// idle when it starts (after this Decision's preemptions and earlier starts): on a cluster of
// one-unit nodes, on `machine` itself. fairness/cluster_view.h's IdleMachines follows this rule.
struct Placement {
  std::string job_id;
  std::size_t machine = 0;  // into ClusterState::machines; idle, or freed by this Decision
};

struct Decision {
  // Jobs to start now. The caller applies `preempt` first: a placement may name a machine that
  // one of this Decision's preemptions frees.
  std::vector<Placement> start;
  std::vector<std::string> preempt;  // running job ids to stop (preemptive policies only)
  std::map<std::string, double> estimated_start;  // advisory, for queued jobs that don't start
  // allox: each user's current share L (fairness/share.h) in the snapshot the decision started
  // from, before its starts; empty for other policies. A caller that reports shares reads them
  // here rather than computing them again (a pass over every running job).
  std::map<std::string, double> shares = {};
};

// srpt's ranking key (fairness/srpt_policy.cc states both rules in full).
enum class SrptRank {
  kRemaining,  // estimated remaining time; a newcomer displaces only where it finishes sooner
  kOriginal,   // the job's original estimate, whatever it has done (a reading of the reference)
};

// es's choice of a user's job for the free machines of its part (fairness/equal_share_policy.cc
// states both rules in full).
enum class EsPick {
  kShortestThere,  // the user's job shortest on a free machine's type (the paper's ES)
  kHeadOnFastest,  // the user's head job, on its fastest type only, else the user waits
};

struct PolicyOptions {
  double alpha = 0.1;  // allox: fraction of users per fairness round, in (0, 1]
  // allox: a job queued longer than this (seconds) enters every round and starts first. allox's
  // extension beyond the paper; infinity (the default, the paper's setting) turns it off.
  double starvation_bound = std::numeric_limits<double>::infinity();
  // allox: start every job a round's plan puts first on an idle machine, instead of the paper's
  // one start per round followed by re-ranking users and solving again.
  bool batch_rounds = false;
  double usage_window = 3600;            // sliding window for cumulative usage reports (seconds)
  std::string matcher_backend = "auto";  // allox: auto, lemon, boost, glpk, transport, assignment
  // allox: always fill Decision::estimated_start for jobs left queued (one more matcher solve per
  // decision when the rounds did not already plan every queued job). For people (the extender's
  // queue reasons); the simulator can leave it off.
  bool estimate_starts = false;
  // las: attained-service thresholds (seconds, ascending) between its priority queues, and the
  // promotion knob: a queued job that has waited longer than this many times its attained
  // service returns to the top queue (Tiresias' starvation guard).
  std::vector<double> las_queue_thresholds = {100, 1000};
  double las_promotion_factor = 4;
  SrptRank srpt_rank = SrptRank::kRemaining;
  EsPick es_pick = EsPick::kShortestThere;
  // drf, drffifo: what one machine of each device type offers, by resource name; the dominant
  // share is then taken over those resources, each job holding its Job::holds (fairness/
  // drf_share.h). Empty (the default): over the device types, machines per type.
  MachineCapacity drf_capacity;
};

// What a policy's plans cost against their lower bounds, summed over the solves that were not
// exact (allox's multi-unit rounds, matcher/multi_unit.h): Σ cost / Σ bound − 1 is the overall gap.
struct PlanQuality {
  std::size_t solves = 0;
  double cost = 0;       // Σ planned Σ (finish − now), seconds
  double bound = 0;      // Σ lower bounds of the same
  double worst_gap = 0;  // the largest single solve's (cost − bound) / bound
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string name() const = 0;
  // True when decide() may return preemptions (srpt, las).
  virtual bool preemptive() const { return false; }
  // False for a policy that never reads processing-time estimates (drffifo): the simulator
  // then runs no profiling for it, as the paper's DRFFIFO has none.
  virtual bool uses_estimates() const { return true; }
  virtual Expected<Decision> decide(const ClusterState& state) = 0;
  // Set by a policy whose plans may be inexact (allox with multi-unit jobs), after some solves.
  virtual std::optional<PlanQuality> plan_quality() const { return std::nullopt; }
};

// Names: allox, fifo, sjf, drf, drf-ext, drffifo, es, srpt, las, maxmin, and the earlier
// variants es-fastest and drf-ext-fastest. Unknown names and out-of-range
// options are errors naming the field.
Expected<std::unique_ptr<SchedulingPolicy>> make_policy(const std::string& name,
                                                        const PolicyOptions& options);
std::vector<std::string> policy_names();

}  // namespace allox
