// Admissions: the controller's word that a job starts as one variant on a planned machine. The
// planner holds that machine for it in the plans that follow (hold_admitted) until its bind, or
// until the hold lapses.
#include <algorithm>
#include <string>
#include <string_view>

#include "alloxd/plan/planner.h"

namespace allox::extender {

std::optional<std::string> Planner::admitted_as(const std::string& job_id) const {
  std::shared_lock lock(book_mu_);
  auto it = admitted_.find(job_id);
  if (it == admitted_.end()) return std::nullopt;
  return it->second.pod_key;
}

bool Planner::admission_stands(const std::string& job_id, const std::string& pod_key,
                               const PlannedStart& start) const {
  std::shared_lock lock(book_mu_);
  const BookJob* job = book_.job(job_id);
  if (job == nullptr || job->record.phase != JobPhase::kQueued) return false;
  return admitted_as_before(job_id, pod_key, start);
}

bool Planner::admitted_as_before(const std::string& job_id, const std::string& pod_key,
                                 const PlannedStart& start) const {
  auto known = admitted_.find(job_id);
  return known != admitted_.end() && known->second.pod_key == pod_key &&
         known->second.start == start &&
         std::chrono::duration<double>(steady_now() - known->second.at).count() <=
             options_.admission_hold;
}

std::optional<std::chrono::steady_clock::time_point> Planner::hold_lapses_at(
    const std::string& job_id) const {
  std::shared_lock lock(book_mu_);
  auto it = admitted_.find(job_id);
  if (it == admitted_.end()) return std::nullopt;
  return it->second.at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(options_.admission_hold));
}

namespace {

// The machines held for admitted jobs in one plan's input: a hold marks its machine busy for the
// job's time and the job running there, and takes the job out of the queue, and its pods'
// constraints out of PlanInput::queue_placements with it, which is indexed alike (one compaction
// at the end, not an erase per hold).
class AdmissionHolds {
 public:
  AdmissionHolds(PlanInput& input, double now)
      : state_(input.state), placements_(input.queue_placements), now_(now) {}

  // `units`: the idle slots held, the first of them start.slot's replacement.
  void hold(const std::string& job_id, const QueuedJob& queued, std::size_t queue_index,
            PlannedStart start, const std::vector<std::size_t>& units, double seconds) {
    for (std::size_t slot : units) {
      state_.idle[slot] = false;
      state_.machines[slot].busy_until = now_ + seconds;
    }
    start.slot = static_cast<int>(units.front());
    state_.running.push_back({queued.job, units.front(), now_, now_ + seconds, 0,
                              std::vector<std::size_t>(units.begin() + 1, units.end())});
    held_.emplace_back(job_id, std::move(start));
    if (keep_.empty()) keep_.assign(state_.queue.size(), true);
    keep_[queue_index] = false;
  }

  // The holds, job by job, with their jobs gone from the queue.
  std::vector<std::pair<std::string, PlannedStart>> take() {
    if (held_.empty()) return std::move(held_);
    placements_.resize(state_.queue.size());  // none where an input lists fewer
    std::size_t kept = 0;
    for (std::size_t i = 0; i < state_.queue.size(); ++i) {
      if (!keep_[i]) continue;
      placements_[kept] = std::move(placements_[i]);
      state_.queue[kept++] = std::move(state_.queue[i]);
    }
    state_.queue.resize(kept);
    placements_.resize(kept);
    return std::move(held_);
  }

 private:
  ClusterState& state_;
  std::vector<std::shared_ptr<const std::vector<JobVariant>>>& placements_;
  const double now_;
  std::vector<std::pair<std::string, PlannedStart>> held_;
  std::vector<bool> keep_;  // per queued job; empty until the first hold
};

// The idle slots of `start`'s node and device for its units: `start.slot` first when
// `exact` (and none unless it is idle), else the node's lowest idle ones; empty when fewer than
// start.units are idle. A node's machines of one device are adjacent slots
// (JobBook::set_inventory).
std::vector<std::size_t> idle_units(const std::vector<MachineSlot>& slots,
                                    const ClusterState& state, const PlannedStart& start,
                                    bool exact) {
  const auto at = static_cast<std::size_t>(start.slot);
  auto same_machine_type = [&](std::size_t i) {
    return slots[i].node == start.node && slots[i].device == start.device;
  };
  std::vector<std::size_t> out;
  if (exact) {
    if (!state.idle[at]) return {};
    out.push_back(at);
  }
  std::size_t first = at;
  while (first > 0 && same_machine_type(first - 1)) --first;
  const auto units = static_cast<std::size_t>(std::max(1, start.units));
  for (std::size_t i = first; i < slots.size() && same_machine_type(i) && out.size() < units; ++i) {
    if (state.idle[i] && !(exact && i == at)) out.push_back(i);
  }
  if (out.size() < units) return {};
  return out;
}

// An admission whose slot another start took: a bind that reached a node with no slot named
// (the watch's, or one kube-scheduler sent elsewhere) takes the node's first free machines, which
// may be ones held for this job. The node may still have the machines the other start was
// planned on, so the job keeps its node on those (hold_displaced, after every admission whose
// slots are free kept them) rather than be planned afresh while its pod is already released.
struct Displaced {
  const std::string* job_id;
  const QueuedJob* queued;
  std::size_t queue_index;
  const PlannedStart* start;
  double seconds;
};

void hold_displaced(const std::vector<Displaced>& displaced, const std::vector<MachineSlot>& slots,
                    const ClusterState& state, AdmissionHolds& holds) {
  for (const Displaced& d : displaced) {
    std::vector<std::size_t> units = idle_units(slots, state, *d.start, /*exact=*/false);
    if (units.empty()) continue;  // not enough free machines left there: planned afresh
    holds.hold(*d.job_id, *d.queued, d.queue_index, *d.start, units, d.seconds);
  }
}

}  // namespace

std::vector<std::pair<std::string, PlannedStart>> Planner::hold_admitted(PlanInput& input,
                                                                         double now) const {
  ClusterState& state = input.state;
  if (held_jobs_.empty()) return {};
  // Thousands of admissions can wait for their binds while tens of thousands of jobs queue: the
  // queue is in plan order (arrival, id; JobBook::snapshot), so each admission is a binary
  // search, and one compaction follows, not an index of the whole queue per plan.
  auto in_order = [](const QueuedJob& q, const std::pair<double, std::string_view>& key) {
    return std::pair<double, std::string_view>(q.job->arrival, q.job->id) < key;
  };
  AdmissionHolds holds(input, now);
  std::vector<Displaced> displaced;
  const std::vector<MachineSlot>& slots = *input.slots;
  const auto wall = steady_now();
  for (const std::string& job_id : held_jobs_) {
    auto admitted = admitted_.find(job_id);
    if (admitted == admitted_.end()) continue;  // gone since (pruned by the next plan)
    const Admission& admission = admitted->second;
    if (std::chrono::duration<double>(wall - admission.at).count() > options_.admission_hold) {
      continue;  // lapsed: planned afresh
    }
    const BookJob* job = book_.job(job_id);
    if (job == nullptr || job->record.phase != JobPhase::kQueued) continue;  // started or gone
    const std::pair<double, std::string_view> key(job->record.arrival, job_id);
    auto found = std::lower_bound(state.queue.begin(), state.queue.end(), key, in_order);
    if (found == state.queue.end() || found->job->id != job_id) continue;  // parked, in doubt
    const QueuedJob& queued = *found;
    const auto slot = static_cast<std::size_t>(admission.start.slot);
    if (admission.start.slot < 0 || slot >= state.machines.size() || slot >= slots.size() ||
        slots[slot].node != admission.start.node ||
        state.machines[slot].device != admission.start.device) {
      continue;  // the inventory changed under it: planned afresh
    }
    auto time = queued.job->time.find(admission.start.device);
    if (time == queued.job->time.end()) continue;
    const auto queue_index = static_cast<std::size_t>(found - state.queue.begin());
    if (std::vector<std::size_t> units = idle_units(slots, state, admission.start, true);
        !units.empty()) {
      holds.hold(job_id, queued, queue_index, admission.start, units, time->second);
    } else {
      displaced.push_back({&job_id, &queued, queue_index, &admission.start, time->second});
    }
  }
  hold_displaced(displaced, slots, state, holds);
  return holds.take();
}

void Planner::drop_stale_holds() {
  for (auto it = held_jobs_.begin(); it != held_jobs_.end();) {
    const BookJob* job = book_.job(*it);
    if (!admitted_.count(*it) || job == nullptr || job->record.phase != JobPhase::kQueued) {
      it = held_jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

Status Planner::admit(const std::string& job_id, const std::string& pod_key,
                      const PlannedStart& start) {
  return admit_all({{job_id, pod_key, start}}).front();
}

std::vector<Status> Planner::admit_all(const std::vector<AdmitRequest>& admissions) {
  std::vector<BookChange> changes;
  changes.reserve(admissions.size());
  for (const AdmitRequest& a : admissions) {
    changes.emplace_back(book::Admit{a.job_id, a.pod_key, a.start});
  }
  return apply(changes);
}

}  // namespace allox::extender
