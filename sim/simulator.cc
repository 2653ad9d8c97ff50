#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>

#include "core/csv.h"
#include "fairness/cluster_view.h"
#include "profiler/profiler.h"

namespace allox {
namespace {

enum class EventKind : int { kMachineFree = 0, kArrival = 1, kRound = 2 };

struct Event {
  double time = 0;
  EventKind kind = EventKind::kArrival;
  std::uint64_t seq = 0;         // insertion order breaks remaining ties: deterministic
  std::size_t subject = 0;       // machine (kMachineFree) or trace job (kArrival)
  std::uint64_t generation = 0;  // a machine's generation when the event was scheduled

  bool operator>(const Event& other) const {
    if (time != other.time) return time > other.time;
    if (kind != other.kind) return kind > other.kind;
    return seq > other.seq;
  }
};

// Who occupies a machine.
enum class Occupant { kNone, kJob, kProfiling, kInitialBusy };

struct MachineSlot {
  Occupant occupant = Occupant::kNone;
  std::size_t job = 0;    // trace job (kJob) or profiled job (kProfiling)
  std::size_t batch = 0;  // profiling batch (kProfiling)
  std::uint64_t generation = 0;
  double start = 0;
  double estimated_end = 0;
  double iterations = 0;  // kProfiling: the run's iterations
  // kJob on a job's lowest unit: the job's other units (held by the same job, no events).
  std::vector<std::size_t> others;
};

struct ProfilingRun {
  std::size_t job = 0;
  std::size_t batch = 0;
  double iterations = 0;
  double duration = 0;
};

// A job's true speed on one device type: T = startup + iterations × per_iteration.
struct TrueSpeed {
  double total = 0;
  double startup = 0;
  double per_iteration = 0;
};

// Jobs that arrived at the same time; schedulable once all their profiling runs are done.
struct ProfilingBatch {
  std::size_t outstanding = 0;
  std::vector<std::size_t> jobs;
};

// Pending profiling runs for one device type: a FIFO per user, served round-robin.
struct ProfilingQueue {
  std::vector<std::deque<ProfilingRun>> per_user;
  std::size_t next_user = 0;

  bool pop(ProfilingRun& out) {
    for (std::size_t i = 0; i < per_user.size(); ++i) {
      std::size_t u = (next_user + i) % per_user.size();
      if (per_user[u].empty()) continue;
      out = per_user[u].front();
      per_user[u].pop_front();
      next_user = (u + 1) % per_user.size();
      return true;
    }
    return false;
  }
};

class Replay {
 public:
  Replay(const Trace& trace, const Cluster& cluster, SchedulingPolicy& policy,
         const SimOptions& options)
      : trace_(trace),
        policy_(policy),
        options_(options),
        profiling_(options.profiling.enabled && policy.uses_estimates()) {
    state_.machines = cluster.machines;
    node_of_ = node_ids(cluster.machines);
    state_.idle.assign(cluster.machines.size(), true);
    state_.users = trace.users;
    slots_.resize(cluster.machines.size());
    for (std::size_t u = 0; u < trace.users.size(); ++u) user_index_[trace.users[u].name] = u;
    for (const Machine& m : cluster.machines) ++device_count_[m.device];
    for (std::size_t j = 0; j < trace.jobs.size(); ++j) job_index_[trace.jobs[j].job.id] = j;
    for (const TraceJob& tj : trace.jobs) {
      Job declared = tj.job;
      if (!declared.iterations) declared.iterations = options.default_iterations;
      declared_.push_back(declared);
    }
    believed_ = declared_;
    iterations_done_.assign(trace.jobs.size(), 0.0);
    run_from_.assign(trace.jobs.size(), 0.0);
    last_report_.assign(trace.jobs.size(), -1.0);
    last_report_elapsed_.assign(trace.jobs.size(), 0.0);
    attained_.assign(trace.jobs.size(), 0.0);
    queued_since_.assign(trace.jobs.size(), 0.0);
    user_busy_.assign(trace.users.size(), 0);

    result_.policy = policy.name();
    result_.machines = cluster.machines.size();
    for (const User& u : trace.users) result_.users.push_back(u.name);
    for (const TraceJob& tj : trace.jobs) {
      SimJobRecord r;
      r.job = tj.job.id;
      r.user = tj.job.user;
      r.arrival = tj.job.arrival;
      r.schedulable = tj.job.arrival;
      result_.jobs.push_back(std::move(r));
    }
  }

  Expected<SimResult> run() {
    const auto wall_start = std::chrono::steady_clock::now();
    for (std::size_t m = 0; m < state_.machines.size(); ++m) {
      if (state_.machines[m].busy_until > 0) {
        slots_[m].occupant = Occupant::kInitialBusy;
        state_.idle[m] = false;
        push(state_.machines[m].busy_until, EventKind::kMachineFree, m, slots_[m].generation);
      }
    }
    for (std::size_t j = 0; j < trace_.jobs.size(); ++j) {
      push(trace_.jobs[j].job.arrival, EventKind::kArrival, j, 0);
    }
    if (options_.round_period > 0 && !trace_.jobs.empty()) {
      push(trace_.jobs.front().job.arrival + options_.round_period, EventKind::kRound, 0, 0);
    }

    while (!events_.empty()) {
      const double now = events_.top().time;
      state_.now = now;
      bool round = false, changed = false;
      while (!events_.empty() && events_.top().time == now) {
        Event e = events_.top();
        events_.pop();
        switch (e.kind) {
          case EventKind::kMachineFree:
            changed |= machine_free(e);
            break;
          case EventKind::kArrival:
            arrive(e.subject);
            changed = true;
            break;
          case EventKind::kRound:
            round = changed = true;
            break;
        }
      }
      // Only finish events of preempted jobs: nothing happened, and deciding here would let
      // every preemption schedule another decision.
      if (!changed) continue;
      place_profiling_runs();
      if (Status s = decide_until_stable(); !s.ok()) return s.error();
      record_shares(now);
      // A round with nothing else pending could only repeat the same answer forever.
      if (round && !events_.empty()) {
        if (++rounds_ > kMaxPeriodicRounds) {
          return Error{"simulate: over " + std::to_string(kMaxPeriodicRounds) +
                       " periodic rounds of " + csv_number(options_.round_period) +
                       " s by t = " + csv_number(now) +
                       " s; the trace's times call for a longer round period"};
        }
        push(next_round(now), EventKind::kRound, 0, 0);
      }
      report_progress();
    }
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    result_.plan_quality = policy_.plan_quality();
    return std::move(result_);
  }

 private:
  void push(double time, EventKind kind, std::size_t subject, std::uint64_t generation) {
    events_.push(Event{time, kind, next_seq_++, subject, generation});
  }

  // What policies see of job j: its estimates (profiler's or the trace's), never true times.
  const Job& job(std::size_t j) const { return believed_[j]; }
  double iterations(std::size_t j) const { return static_cast<double>(*declared_[j].iterations); }
  bool use_profiler() const { return options_.estimates == EstimateMode::kProfiler; }

  TrueSpeed true_speed(std::size_t j, const DeviceType& device) const {
    TrueSpeed t;
    t.total = trace_.jobs[j].true_time.at(device);
    t.startup = std::min(options_.profiling.startup, t.total / 2);
    t.per_iteration = (t.total - t.startup) / iterations(j);
    return t;
  }

  // Whole iterations job j has done `elapsed` seconds into its current run on `device`.
  // Under ResumeRule::kExact progress is linear over the job's whole true time (start-up
  // included), as that rule counts it.
  double iterations_at(std::size_t j, const DeviceType& device, double elapsed) const {
    const TrueSpeed t = true_speed(j, device);
    if (options_.resume == ResumeRule::kExact) {
      const double at = std::floor(run_from_[j] + elapsed / t.total * iterations(j) + 1e-9);
      return std::clamp(at, run_from_[j], iterations(j));
    }
    const double fresh = std::floor(std::max(elapsed - t.startup, 0.0) / t.per_iteration + 1e-9);
    return std::min(run_from_[j] + fresh, iterations(j));
  }

  // The trace's error on a device: estimate / true − 1.
  double trace_error(std::size_t j, const DeviceType& device) const {
    return trace_.jobs[j].job.time.at(device) / trace_.jobs[j].true_time.at(device) - 1;
  }
  std::size_t user_of(std::size_t j) const { return user_index_.at(job(j).user); }

  // The round after one at `now`. With every job that has arrived finished, the rounds before the
  // next event would change nothing: the grid resumes at its last point at or before that event,
  // so a long gap between arrivals costs two rounds, not one per period.
  double next_round(double now) const {
    const double next = now + options_.round_period;
    const double event = events_.top().time;
    if (arrived_ != finished_ || event <= next) return next;
    return now + std::floor((event - now) / options_.round_period) * options_.round_period;
  }

  void arrive(std::size_t j) {
    ++arrived_;
    if (use_profiler()) profiler_.add_job(declared_[j]);
    if (!profiling_) {
      enqueue(j, job(j).arrival);
      return;
    }
    // Jobs arriving together share a batch; events for equal times are handled back to back.
    if (batches_.empty() || batch_time_ != job(j).arrival) {
      batches_.emplace_back();
      batch_time_ = job(j).arrival;
      open_batches_.push_back(batches_.size() - 1);
    }
    const std::size_t b = batches_.size() - 1;
    batches_[b].jobs.push_back(j);
    for (const auto& [device, true_time] : trace_.jobs[j].true_time) {
      if (!device_count_.count(device)) continue;
      ProfilingQueue& q = profiling_queues_[device];
      q.per_user.resize(trace_.users.size());
      const TrueSpeed t = true_speed(j, device);
      for (double fraction : options_.profiling.fractions) {
        const double n = std::max(1.0, std::round(fraction * iterations(j)));
        const double length =
            options_.profiling.run_length == ProfilingRunLength::kFractionOfTime
                ? fraction * t.total
                : t.startup + n * t.per_iteration;
        const double duration = std::max(options_.profiling.min_run, length);
        q.per_user[user_of(j)].push_back(ProfilingRun{j, b, n, duration});
        ++batches_[b].outstanding;
        ++result_.profiling_runs;
      }
    }
  }

  // Batches with no runs (no device of theirs in the cluster) are schedulable on arrival.
  void release_empty_batches(double now) {
    for (std::size_t b : open_batches_) {
      if (batches_[b].outstanding == 0) release_batch(b, now);
    }
    open_batches_.clear();
  }

  void release_batch(std::size_t b, double now) {
    for (std::size_t j : batches_[b].jobs) {
      result_.jobs[j].schedulable = now;
      enqueue(j, now);
    }
  }

  void enqueue(std::size_t j, double since) {
    if (use_profiler()) {
      for (auto& [device, t] : believed_[j].time) {
        Expected<RateEstimate> e = profiler_.estimate(declared_[j], device);
        if (e.ok()) t = e->total_seconds;
      }
    }
    queued_since_[j] = since;
    QueuedJob q;
    q.job = &believed_[j];
    q.queued_since = since;
    state_.queue.push_back(std::move(q));
  }

  // False for the stale finish event of a preempted job.
  bool machine_free(const Event& e) {
    MachineSlot& slot = slots_[e.subject];
    if (e.generation != slot.generation) return false;
    const double now = e.time;
    switch (slot.occupant) {
      case Occupant::kJob: {
        SimJobRecord& r = result_.jobs[slot.job];
        const DeviceType& device = state_.machines[e.subject].device;
        r.finish = now;
        r.device = device;
        r.machine = state_.machines[e.subject].name;
        r.estimated_time = job(slot.job).time.at(device);
        r.true_time = trace_.jobs[slot.job].true_time.at(device);
        r.units = job(slot.job).units;
        ++finished_;
        remove_running(e.subject);
        user_busy_[user_of(slot.job)] -= job(slot.job).units;
        release_others(slot, now);
        break;
      }
      case Occupant::kProfiling: {
        if (use_profiler()) {
          const DeviceType& device = state_.machines[e.subject].device;
          const double measured = (now - slot.start) * (1 + trace_error(slot.job, device));
          // A sample the fit rejects leaves the job to its declared time: never fatal.
          (void)profiler_.add_profile(
              {trace_.jobs[slot.job].job.id, device, slot.iterations, measured});
        }
        --user_busy_[user_of(slot.job)];
        if (--batches_[slot.batch].outstanding == 0) release_batch(slot.batch, now);
        break;
      }
      case Occupant::kInitialBusy:
      case Occupant::kNone:
        break;
    }
    slot.occupant = Occupant::kNone;
    ++slot.generation;
    state_.idle[e.subject] = true;
    state_.machines[e.subject].busy_until = now;
    return true;
  }

  // Frees the other units of the job on `slot` (a multi-unit job's lowest unit).
  void release_others(MachineSlot& slot, double now) {
    for (std::size_t m : slot.others) {
      slots_[m].occupant = Occupant::kNone;
      ++slots_[m].generation;
      state_.idle[m] = true;
      state_.machines[m].busy_until = now;
    }
    slot.others.clear();
  }

  void remove_running(std::size_t machine) {
    auto it = std::find_if(state_.running.begin(), state_.running.end(),
                           [&](const RunningJob& r) { return r.machine == machine; });
    if (it != state_.running.end()) state_.running.erase(it);
  }

  void place_profiling_runs() {
    if (!profiling_) return;
    release_empty_batches(state_.now);
    for (std::size_t m = 0; m < state_.machines.size(); ++m) {
      if (!state_.idle[m]) continue;
      auto q = profiling_queues_.find(state_.machines[m].device);
      ProfilingRun run;
      if (q == profiling_queues_.end() || !q->second.pop(run)) continue;
      MachineSlot& slot = slots_[m];
      slot.occupant = Occupant::kProfiling;
      slot.job = run.job;
      slot.batch = run.batch;
      slot.iterations = run.iterations;
      slot.start = state_.now;
      slot.estimated_end = state_.now + run.duration;
      state_.idle[m] = false;
      state_.machines[m].busy_until = slot.estimated_end;
      ++user_busy_[user_of(run.job)];
      push(slot.estimated_end, EventKind::kMachineFree, m, slot.generation);
    }
  }

  // Brings what a policy sees up to date with the clock: each running job reports the whole
  // iterations it has done (as a real job would), and its estimated finish is now + the remaining
  // time the estimates give (see the header), never its true remaining time.
  void refresh_view() {
    const double now = state_.now;
    for (RunningJob& r : state_.running) {
      const std::size_t j = job_index_.at(r.job->id);
      const DeviceType& device = state_.machines[r.machine].device;
      const double elapsed = now - r.start;
      report_progress_of(j, device, elapsed);
      r.attained_service = attained_[j] + elapsed;
      r.estimated_finish = now + estimated_remaining(j, device, elapsed);
      state_.machines[r.machine].busy_until = r.estimated_finish;
      for (std::size_t m : r.other_machines) state_.machines[m].busy_until = r.estimated_finish;
    }
  }

  // Sends job j's latest progress report to the profiler when it has finished a new iteration.
  void report_progress_of(std::size_t j, const DeviceType& device, double elapsed) {
    if (!use_profiler()) return;
    const double done = iterations_at(j, device, elapsed);
    if (done <= run_from_[j] || done <= last_report_[j]) return;
    const TrueSpeed t = true_speed(j, device);
    const double reported_at = options_.resume == ResumeRule::kExact
                                   ? (done - run_from_[j]) / iterations(j) * t.total
                                   : t.startup + (done - run_from_[j]) * t.per_iteration;
    if (profiler_.add_progress({trace_.jobs[j].job.id, device, done, reported_at}).ok()) {
      last_report_[j] = done;
      last_report_elapsed_[j] = reported_at;
    }
  }

  // Estimated seconds left for job j, `elapsed` seconds into its run on `device`.
  double estimated_remaining(std::size_t j, const DeviceType& device, double elapsed) const {
    if (!use_profiler()) {
      const double left = 1 - run_from_[j] / iterations(j);
      return std::max(job(j).time.at(device) * left - elapsed, 0.0);
    }
    Expected<RateEstimate> e = profiler_.estimate(declared_[j], device);
    if (!e.ok()) return 0;
    // The estimate holds from the last report of this run, else from the run's start.
    const double since =
        last_report_[j] > run_from_[j] ? elapsed - last_report_elapsed_[j] : elapsed;
    return std::max(e->remaining_seconds - since, 0.0);
  }

  // A preempted job's estimated remaining time on every device type it can use.
  std::map<DeviceType, double> remaining_estimates(std::size_t j) const {
    std::map<DeviceType, double> left;
    for (const auto& [device, estimate] : job(j).time) {
      if (use_profiler()) {
        Expected<RateEstimate> e = profiler_.estimate(declared_[j], device);
        left[device] = e.ok() ? e->remaining_seconds : estimate;
      } else {
        left[device] = estimate * (1 - iterations_done_[j] / iterations(j));
      }
    }
    return left;
  }

  // Asks the policy again only while its last answer started jobs without preempting any and
  // machines are still idle: a policy may start one job per call (AlloX re-solves after each
  // start), but a preemptive policy's evictions compete again at the next event, not in a loop
  // that could evict and restart the same jobs at one instant forever.
  Status decide_until_stable() {
    for (std::size_t call = 0; call <= state_.machines.size(); ++call) {
      if (state_.queue.empty()) return OkStatus();
      const bool any_idle =
          std::find(state_.idle.begin(), state_.idle.end(), true) != state_.idle.end();
      if (!any_idle && (call > 0 || !policy_.preemptive())) return OkStatus();
      refresh_view();
      Expected<Decision> decision = policy_.decide(state_);
      ++result_.decide_calls;
      if (!decision.ok()) return fail("decide() failed: " + decision.message());
      if (Status s = apply(*decision); !s.ok()) return s;
      if (decision->start.empty() || !decision->preempt.empty()) return OkStatus();
    }
    return OkStatus();
  }

  Status fail(const std::string& what) const {
    return Error{"policy " + policy_.name() + " at t=" + std::to_string(state_.now) + ": " + what};
  }

  Status apply(const Decision& decision) {
    if (!decision.preempt.empty() && !policy_.preemptive()) {
      return fail("a non-preemptive policy asked to preempt " + decision.preempt.front());
    }
    for (const std::string& id : decision.preempt) {
      if (Status s = preempt(id); !s.ok()) return s;
    }
    for (const Placement& p : decision.start) {
      if (Status s = start(p); !s.ok()) return s;
    }
    return OkStatus();
  }

  Status preempt(const std::string& id) {
    auto it = std::find_if(state_.running.begin(), state_.running.end(),
                           [&](const RunningJob& r) { return r.job->id == id; });
    if (it == state_.running.end()) return fail("preempt of job " + id + ", which is not running");
    const std::size_t m = it->machine;
    const std::size_t j = job_index_.at(id);
    const DeviceType& device = state_.machines[m].device;
    const double ran = state_.now - slots_[m].start;
    report_progress_of(j, device, ran);
    if (options_.resume == ResumeRule::kExact) {
      // Progress is the share of the whole job's true time this run covered, kept exactly.
      const double done = ran / true_speed(j, device).total * iterations(j);
      iterations_done_[j] = std::min(run_from_[j] + done, iterations(j));
    } else {
      // The run resumes from its last whole iteration (its checkpoint); the rest is lost.
      iterations_done_[j] = iterations_at(j, device, ran);
    }
    attained_[j] += ran;
    ++result_.jobs[j].preemptions;
    state_.running.erase(it);
    user_busy_[user_of(j)] -= job(j).units;
    release_others(slots_[m], state_.now);
    slots_[m].occupant = Occupant::kNone;
    ++slots_[m].generation;  // cancels the pending finish event
    state_.idle[m] = true;
    state_.machines[m].busy_until = state_.now;

    QueuedJob q;
    q.job = &job(j);
    q.queued_since = queued_since_[j];
    q.attained_service = attained_[j];
    q.remaining = remaining_estimates(j);
    state_.queue.push_back(std::move(q));
    return OkStatus();
  }

  Status start(const Placement& p) {
    auto known = job_index_.find(p.job_id);
    if (known == job_index_.end()) return fail("start of unknown job " + p.job_id);
    const std::size_t j = known->second;
    auto queued = std::find_if(state_.queue.begin(), state_.queue.end(),
                               [&](const QueuedJob& q) { return q.job == &job(j); });
    if (queued == state_.queue.end())
      return fail("start of job " + p.job_id + ", which is not queued");
    if (p.machine >= state_.machines.size()) {
      return fail("start of job " + p.job_id + " on machine index " + std::to_string(p.machine) +
                  " (cluster has " + std::to_string(state_.machines.size()) + ")");
    }
    const int units = job(j).units;
    std::optional<std::vector<std::size_t>> gang =
        gang_units(state_.machines, state_.idle, node_of_, p.machine, units);
    if (!gang) {
      if (units == 1) {
        return fail("start of job " + p.job_id + " on busy machine " +
                    state_.machines[p.machine].name);
      }
      return fail("start of job " + p.job_id + " (" + std::to_string(units) +
                  " units) on the node of machine " + state_.machines[p.machine].name +
                  ", which has fewer idle units");
    }
    const std::size_t first = gang->front();
    const DeviceType& device = state_.machines[first].device;
    auto estimate = job(j).time.find(device);
    if (estimate == job(j).time.end()) {
      return fail("job " + p.job_id + " cannot run on " + device + " (machine " +
                  state_.machines[p.machine].name + ")");
    }
    state_.queue.erase(queued);

    run_from_[j] = iterations_done_[j];
    const TrueSpeed speed = true_speed(j, device);
    double true_duration = speed.total;
    if (run_from_[j] > 0) {
      true_duration = options_.resume == ResumeRule::kExact
                          ? speed.total * (1 - run_from_[j] / iterations(j))
                          : speed.startup + (iterations(j) - run_from_[j]) * speed.per_iteration;
    }
    MachineSlot& slot = slots_[first];
    slot.occupant = Occupant::kJob;
    slot.job = j;
    slot.start = state_.now;
    slot.estimated_end = state_.now + estimated_remaining(j, device, 0);
    slot.others.assign(gang->begin() + 1, gang->end());
    for (std::size_t m : *gang) {
      state_.idle[m] = false;
      state_.machines[m].busy_until = slot.estimated_end;
    }
    for (std::size_t m : slot.others) {
      slots_[m].occupant = Occupant::kJob;
      slots_[m].job = j;
    }
    state_.running.push_back(
        RunningJob{&job(j), first, state_.now, slot.estimated_end, attained_[j], slot.others});
    user_busy_[user_of(j)] += units;
    if (!result_.jobs[j].start) result_.jobs[j].start = state_.now;
    result_.jobs[j].last_start = state_.now;
    push(state_.now + true_duration, EventKind::kMachineFree, first, slot.generation);
    return OkStatus();
  }

  void record_shares(double now) {
    if (!result_.shares.empty() && result_.shares.back().machines == user_busy_) return;
    if (!result_.shares.empty() && result_.shares.back().time == now) {
      result_.shares.back().machines = user_busy_;
      return;
    }
    result_.shares.push_back(ShareSample{now, user_busy_});
  }

  void report_progress() {
    if (!options_.progress || trace_.jobs.empty()) return;
    if (++events_since_report_ < 256) return;
    events_since_report_ = 0;
    options_.progress(static_cast<double>(finished_) / trace_.jobs.size());
  }

  const Trace& trace_;
  SchedulingPolicy& policy_;
  const SimOptions& options_;
  const bool profiling_;  // profiling on, and the policy reads estimates

  ClusterState state_;
  std::vector<MachineSlot> slots_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::uint64_t next_seq_ = 0;

  std::unordered_map<std::string, std::size_t> user_index_;
  std::unordered_map<std::string, std::size_t> job_index_;
  std::vector<std::size_t> node_of_;  // node_ids() of the cluster's machines
  std::map<DeviceType, std::size_t> device_count_;
  std::vector<Job> declared_;  // trace jobs with the trace's estimates and an iteration count
  std::vector<Job> believed_;  // what policies see: declared_ with the profiler's estimates
  Profiler profiler_;          // EstimateMode::kProfiler only
  std::vector<double> iterations_done_;      // per job, at its last preemption (its checkpoint)
  std::vector<double> run_from_;             // per job, iterations done when its run started
  std::vector<double> last_report_;          // per job, iterations in its last progress report
  std::vector<double> last_report_elapsed_;  // per job, elapsed run time of that report
  std::vector<double> attained_;             // seconds run before the current stint
  std::vector<double> queued_since_;
  std::vector<int> user_busy_;

  std::vector<ProfilingBatch> batches_;
  std::vector<std::size_t> open_batches_;  // batches created since the last placement pass
  double batch_time_ = -1;
  std::map<DeviceType, ProfilingQueue> profiling_queues_;

  std::size_t finished_ = 0;
  std::size_t arrived_ = 0;
  std::size_t rounds_ = 0;
  std::size_t events_since_report_ = 0;
  SimResult result_;
};

}  // namespace

Expected<SimResult> simulate(const Trace& trace, const Cluster& cluster, SchedulingPolicy& policy,
                             const SimOptions& options) {
  if (Status s = validate_trace(trace); !s.ok()) return s.error();
  if (cluster.machines.empty()) return Error{"simulate: the cluster has no machines"};
  if (options.round_period < 0) return Error{"simulate: round_period must be >= 0"};
  if (options.default_iterations < 1) return Error{"simulate: default_iterations must be >= 1"};
  if (!(options.profiling.startup >= 0)) return Error{"simulate: profiling startup must be >= 0"};
  for (const TraceJob& tj : trace.jobs) {
    if (tj.job.iterations && *tj.job.iterations < 1) {
      return Error{"simulate: job " + tj.job.id + " has iterations < 1"};
    }
  }
  for (double f : options.profiling.fractions) {
    if (!(f > 0 && f < 1)) return Error{"simulate: profiling fractions must be in (0, 1)"};
  }
  for (const Machine& m : cluster.machines) {
    if (m.busy_until < 0) return Error{"simulate: machine " + m.name + " has busy_until < 0"};
  }
  // A job of k units that no node of its device types can hold would wait forever: refuse it.
  const std::map<DeviceType, int> largest = largest_node_units(cluster.machines);
  for (const TraceJob& tj : trace.jobs) {
    if (tj.job.units == 1) continue;
    int most = 0;
    for (const auto& [device, t] : tj.job.time) {
      if (auto it = largest.find(device); it != largest.end()) most = std::max(most, it->second);
    }
    if (most < tj.job.units) {
      return Error{"simulate: job " + tj.job.id + " has units " + std::to_string(tj.job.units) +
                   ", but no node of a device type it can use has that many (largest: " +
                   std::to_string(most) + ")"};
    }
  }
  Replay replay(trace, cluster, policy, options);
  return replay.run();
}

}  // namespace allox
