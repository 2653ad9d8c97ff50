#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>

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
};

struct ProfilingRun {
  std::size_t job = 0;
  std::size_t batch = 0;
  double duration = 0;
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
      : trace_(trace), policy_(policy), options_(options) {
    state_.machines = cluster.machines;
    state_.idle.assign(cluster.machines.size(), true);
    state_.users = trace.users;
    slots_.resize(cluster.machines.size());
    for (std::size_t u = 0; u < trace.users.size(); ++u) user_index_[trace.users[u].name] = u;
    for (const Machine& m : cluster.machines) ++device_count_[m.device];
    for (std::size_t j = 0; j < trace.jobs.size(); ++j) job_index_[trace.jobs[j].job.id] = j;
    progress_.assign(trace.jobs.size(), 0.0);
    attained_.assign(trace.jobs.size(), 0.0);
    queued_since_.assign(trace.jobs.size(), 0.0);
    user_busy_.assign(trace.users.size(), 0);

    result_.policy = policy.name();
    result_.machines = cluster.machines.size();
    for (const User& u : trace.users) result_.users.push_back(u.name);
    for (const TraceJob& tj : trace.jobs) {
      JobRecord r;
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
      if (round && !events_.empty()) push(now + options_.round_period, EventKind::kRound, 0, 0);
      report_progress();
    }
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return std::move(result_);
  }

 private:
  void push(double time, EventKind kind, std::size_t subject, std::uint64_t generation) {
    events_.push(Event{time, kind, next_seq_++, subject, generation});
  }

  const Job& job(std::size_t j) const { return trace_.jobs[j].job; }
  std::size_t user_of(std::size_t j) const { return user_index_.at(job(j).user); }

  void arrive(std::size_t j) {
    if (!options_.profiling.enabled) {
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
      for (double fraction : options_.profiling.fractions) {
        q.per_user[user_of(j)].push_back(
            ProfilingRun{j, b, std::max(options_.profiling.min_run, fraction * true_time)});
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
    queued_since_[j] = since;
    QueuedJob q;
    q.job = &trace_.jobs[j].job;
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
        JobRecord& r = result_.jobs[slot.job];
        const DeviceType& device = state_.machines[e.subject].device;
        r.finish = now;
        r.device = device;
        r.machine = state_.machines[e.subject].name;
        r.estimated_time = job(slot.job).time.at(device);
        r.true_time = trace_.jobs[slot.job].true_time.at(device);
        ++finished_;
        remove_running(e.subject);
        --user_busy_[user_of(slot.job)];
        break;
      }
      case Occupant::kProfiling: {
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

  void remove_running(std::size_t machine) {
    auto it = std::find_if(state_.running.begin(), state_.running.end(),
                           [&](const RunningJob& r) { return r.machine == machine; });
    if (it != state_.running.end()) state_.running.erase(it);
  }

  void place_profiling_runs() {
    if (!options_.profiling.enabled) return;
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
      slot.start = state_.now;
      slot.estimated_end = state_.now + run.duration;
      state_.idle[m] = false;
      state_.machines[m].busy_until = slot.estimated_end;
      ++user_busy_[user_of(run.job)];
      push(slot.estimated_end, EventKind::kMachineFree, m, slot.generation);
    }
  }

  // Brings what a policy sees up to date with the clock. A running job's estimated finish is
  // refined from its progress, as progress reports would: now + estimate × (1 − fraction done),
  // the same remaining time it would show in the queue if it were preempted now.
  void refresh_view() {
    const double now = state_.now;
    for (RunningJob& r : state_.running) {
      const std::size_t j = job_index_.at(r.job->id);
      const DeviceType& device = state_.machines[r.machine].device;
      const double ran = now - r.start;
      const double done = std::min(progress_[j] + ran / trace_.jobs[j].true_time.at(device), 1.0);
      r.attained_service = attained_[j] + ran;
      r.estimated_finish = now + job(j).time.at(device) * (1 - done);
      state_.machines[r.machine].busy_until = r.estimated_finish;
    }
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
    progress_[j] = std::min(progress_[j] + ran / trace_.jobs[j].true_time.at(device), 1.0);
    attained_[j] += ran;
    ++result_.jobs[j].preemptions;
    state_.running.erase(it);
    --user_busy_[user_of(j)];
    slots_[m].occupant = Occupant::kNone;
    ++slots_[m].generation;  // cancels the pending finish event
    state_.idle[m] = true;
    state_.machines[m].busy_until = state_.now;

    QueuedJob q;
    q.job = &job(j);
    q.queued_since = queued_since_[j];
    q.attained_service = attained_[j];
    for (const auto& [d, estimate] : job(j).time) q.remaining[d] = estimate * (1 - progress_[j]);
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
    if (!state_.idle[p.machine]) {
      return fail("start of job " + p.job_id + " on busy machine " +
                  state_.machines[p.machine].name);
    }
    const DeviceType& device = state_.machines[p.machine].device;
    auto estimate = job(j).time.find(device);
    if (estimate == job(j).time.end()) {
      return fail("job " + p.job_id + " cannot run on " + device + " (machine " +
                  state_.machines[p.machine].name + ")");
    }
    state_.queue.erase(queued);

    const double left = 1 - progress_[j];
    const double true_duration = trace_.jobs[j].true_time.at(device) * left;
    MachineSlot& slot = slots_[p.machine];
    slot.occupant = Occupant::kJob;
    slot.job = j;
    slot.start = state_.now;
    slot.estimated_end = state_.now + estimate->second * left;
    state_.idle[p.machine] = false;
    state_.machines[p.machine].busy_until = slot.estimated_end;
    state_.running.push_back(
        RunningJob{&job(j), p.machine, state_.now, slot.estimated_end, attained_[j]});
    ++user_busy_[user_of(j)];
    if (!result_.jobs[j].start) result_.jobs[j].start = state_.now;
    result_.jobs[j].last_start = state_.now;
    push(state_.now + true_duration, EventKind::kMachineFree, p.machine, slot.generation);
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

  ClusterState state_;
  std::vector<MachineSlot> slots_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::uint64_t next_seq_ = 0;

  std::unordered_map<std::string, std::size_t> user_index_;
  std::unordered_map<std::string, std::size_t> job_index_;
  std::map<DeviceType, std::size_t> device_count_;
  std::vector<double> progress_;  // fraction of each job's work done before its last preemption
  std::vector<double> attained_;  // seconds run before the current stint
  std::vector<double> queued_since_;
  std::vector<int> user_busy_;

  std::vector<ProfilingBatch> batches_;
  std::vector<std::size_t> open_batches_;  // batches created since the last placement pass
  double batch_time_ = -1;
  std::map<DeviceType, ProfilingQueue> profiling_queues_;

  std::size_t finished_ = 0;
  std::size_t events_since_report_ = 0;
  SimResult result_;
};

}  // namespace

Expected<SimResult> simulate(const Trace& trace, const Cluster& cluster, SchedulingPolicy& policy,
                             const SimOptions& options) {
  if (Status s = validate_trace(trace); !s.ok()) return s.error();
  if (cluster.machines.empty()) return Error{"simulate: the cluster has no machines"};
  if (options.round_period < 0) return Error{"simulate: round_period must be >= 0"};
  for (double f : options.profiling.fractions) {
    if (!(f > 0 && f < 1)) return Error{"simulate: profiling fractions must be in (0, 1)"};
  }
  for (const Machine& m : cluster.machines) {
    if (m.busy_until < 0) return Error{"simulate: machine " + m.name + " has busy_until < 0"};
  }
  Replay replay(trace, cluster, policy, options);
  return replay.run();
}

}  // namespace allox
