// Admissions: the controller's word that a job starts as one variant on a planned machine. The
// planner holds that machine for it in the plans that follow (hold_admitted) until its bind, or
// until the hold lapses.
#include "alloxd/plan/planner.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace allox::extender {

std::optional<std::string> Planner::admitted_as(const std::string& job_id) const {
  std::shared_lock lock(book_mu_);
  auto it = admitted_.find(job_id);
  if (it == admitted_.end()) return std::nullopt;
  return it->second.pod_key;
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
// job's time and the job running there, and takes the job out of the queue (one compaction at
// the end, not an erase per hold).
class AdmissionHolds {
 public:
  AdmissionHolds(ClusterState& state, double now) : state_(state), now_(now) {}

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
    std::size_t kept = 0;
    for (std::size_t i = 0; i < state_.queue.size(); ++i) {
      if (keep_[i]) state_.queue[kept++] = std::move(state_.queue[i]);
    }
    state_.queue.resize(kept);
    return std::move(held_);
  }

 private:
  ClusterState& state_;
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
  AdmissionHolds holds(state, now);
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

struct Planner::Admitting {
  std::size_t index = 0;  // into admissions
  std::int64_t row = 0;
  std::vector<PodIdentity> siblings;
  std::size_t forgotten = 0;  // siblings out of the store
};

std::vector<Status> Planner::admit_all(const std::vector<AdmitRequest>& admissions) {
  std::vector<Status> outcomes(admissions.size(), OkStatus());
  bool changed = false;
  {
    // As the one writer (write_mu_): read under a shared lock, write the store holding no lock
    // of the book's, then change the book (register_variant's pattern).
    std::lock_guard write(write_mu_);
    std::vector<Admitting> admitting = admissions_to_write(admissions, outcomes);
    if (admitting.empty()) return outcomes;
    forget_siblings(admitting, outcomes);
    changed = book_admissions(admissions, admitting, outcomes);
  }
  if (changed) wake();
  return outcomes;
}

std::vector<Planner::Admitting> Planner::admissions_to_write(
    const std::vector<AdmitRequest>& admissions, std::vector<Status>& outcomes) const {
  std::vector<Admitting> admitting;
  std::shared_lock lock(book_mu_);
  const auto at = steady_now();
  for (std::size_t i = 0; i < admissions.size(); ++i) {
    const AdmitRequest& a = admissions[i];
    const BookJob* job = book_.job(a.job_id);
    if (job == nullptr) {
      outcomes[i] = Error{"job " + a.job_id + " is unknown to allox"};
      continue;
    }
    if (job->record.phase != JobPhase::kQueued) continue;
    if (!job->variants.count(a.pod_key)) {
      outcomes[i] = Error{"pod " + a.pod_key + " is not a variant of job " + a.job_id};
      continue;
    }
    auto known = admitted_.find(a.job_id);
    if (known != admitted_.end() && known->second.pod_key == a.pod_key &&
        known->second.start == a.start &&
        std::chrono::duration<double>(at - known->second.at).count() <= options_.admission_hold) {
      continue;  // as before: nothing to plan again
    }
    Admitting next;
    next.index = i;
    next.row = job->record.row;
    // A gang's other pods are its members, not siblings: all of them run.
    for (const auto& [key, variant] : job->variants) {
      if (key != a.pod_key && !job->is_gang()) next.siblings.push_back(variant.pod);
    }
    admitting.push_back(std::move(next));
  }
  return admitting;
}

void Planner::forget_siblings(std::vector<Admitting>& admitting, std::vector<Status>& outcomes) {
  // The siblings leave the store: all in one transaction, or (when it fails) one by one, each
  // admission stopping at its first failure as alone.
  auto forget = [this](Admitting& a) -> Status {
    for (; a.forgotten < a.siblings.size(); ++a.forgotten) {
      Status s = store_->forget_variant(a.siblings[a.forgotten], a.row, Durability::kWritten);
      if (!s) return s;
    }
    return OkStatus();
  };
  const Status together = store_->batch(
      [&]() -> Status {
        for (Admitting& a : admitting) {
          if (auto s = forget(a); !s) return s;
        }
        return OkStatus();
      },
      Durability::kWritten);
  if (!together) {
    for (Admitting& a : admitting) {
      a.forgotten = 0;  // the batch's writes were rolled back
      outcomes[a.index] = forget(a);
    }
  }
}

bool Planner::book_admissions(const std::vector<AdmitRequest>& admissions,
                              const std::vector<Admitting>& admitting,
                              const std::vector<Status>& outcomes) {
  // An admission exactly as the latest plan starts the job is that plan carried out: the plan
  // the next change brings holds it (hold_admitted), and replanning for it alone would find the
  // same starts. Under a backlog every plan's admissions would otherwise wake a plan of their
  // own. Anything else (a start the plan no longer has, a sibling's removal whose admission
  // failed) wakes the planner.
  const std::shared_ptr<const Plan> latest = plans_.latest();
  auto foreseen = [&](const AdmitRequest& request) {
    auto planned = latest->starts.find(request.job_id);
    return planned != latest->starts.end() && planned->second == request.start;
  };
  bool replan = false;
  const auto at = steady_now();
  write_book_in_chunks(admitting.size(), [&](std::size_t begin, std::size_t end) {
    bool chunk_changed = false;
    for (std::size_t i = begin; i < end; ++i) {
      const Admitting& a = admitting[i];
      for (std::size_t k = 0; k < a.forgotten; ++k) {
        book_.remove_variant(a.siblings[k].namespace_name, a.siblings[k].name);
      }
      chunk_changed = chunk_changed || a.forgotten > 0;
      const AdmitRequest& request = admissions[a.index];
      if (!outcomes[a.index]) {
        replan = replan || a.forgotten > 0;
        continue;
      }
      Admission& admission = admitted_[request.job_id];
      // A hold moved to another machine of the same node (hold_admitted) is the same
      // commitment: its time runs from the first admission.
      const bool moved = admission.pod_key == request.pod_key &&
                         admission.start.node == request.start.node &&
                         admission.start.device == request.start.device;
      admission = {request.pod_key, request.start, moved ? admission.at : at};
      held_jobs_.insert(request.job_id);
      chunk_changed = true;
      replan = replan || !foreseen(request);
    }
    if (chunk_changed) {
      book_.touch();
      admitted_version_.store(book_.version(), std::memory_order_release);
    }
  });
  return replan;
}

}  // namespace allox::extender
