// The planner's book writes of a run's life after the plan: bind intents, starts (grouped, one
// store transaction per group), completions, binds settled from the cluster at start-up, profile
// samples.
#include "alloxd/plan/planner.h"

#include <exception>
#include <map>
#include <optional>
#include <string>

namespace allox::extender {

Status Planner::record_bind_intent(const BindIntent& intent) {
  return store_->record_bind_intent(intent);
}

Status Planner::drop_bind_intent(std::int64_t job_row) {
  return store_->drop_bind_intent(job_row);
}

struct Planner::StartCall {
  const JobVariant& variant;
  const std::string& node;
  int preferred_slot;
  Durability durability;
  std::optional<Expected<Started>> result;  // written by the group's recorder
  bool recorded = false;                    // needs a store write (not a repeat)
  bool done = false;  // under start_group_mu_: result is final and the recorder let go of it
};

Expected<Planner::Started> Planner::record_start(const JobVariant& variant, const std::string& node,
                                                 int preferred_slot, Durability durability) {
  StartCall call{variant, node, preferred_slot, durability, std::nullopt};
  std::unique_lock lock(start_group_mu_);
  start_forming_.push_back(&call);
  while (!call.done) {
    if (start_recording_) {
      start_group_cv_.wait(lock);
      continue;
    }
    // Ours is in the forming group (no one took it, or it would be done by now).
    start_recording_ = true;
    std::vector<StartCall*> group;
    group.swap(start_forming_);
    lock.unlock();
    try {
      record_start_group(group);
    } catch (const std::exception& e) {
      // Every member must get an answer and the next group a recorder, whatever went wrong.
      for (StartCall* member : group) {
        if (!member->result)
          member->result = Error{"recording the start failed: " + std::string(e.what())};
      }
    }
    lock.lock();
    for (StartCall* member : group) member->done = true;  // its caller may return from here on
    start_recording_ = false;
    start_group_cv_.notify_all();
  }
  return std::move(*call.result);
}

void Planner::record_start_group(const std::vector<StartCall*>& group) {
  bool started_any = false;
  bool replan = false;  // a start no plan foresaw (see below)
  {
    std::lock_guard write(write_mu_);
    const double started_at = now();
    write_book([&] {
      for (StartCall* call : group) {
        const JobVariant& variant = call->variant;
        // Idempotent: the watch may report the binding (ClusterFeed) before /bind records it,
        // and a short job may even have finished by then: this very run is not a second start.
        if (const BookJob* job = book_.job(variant.job_id);
            job != nullptr &&
            (job->record.phase == JobPhase::kRunning || job->record.phase == JobPhase::kDone) &&
            job->record.node == call->node &&
            job->record.pod_namespace == variant.pod.namespace_name &&
            job->record.pod_name == variant.pod.name) {
          call->result = Started{job->record, {}};
          continue;
        }
        int slot = call->preferred_slot;
        const auto admission = admitted_.find(variant.job_id);
        if (slot < 0 && admission != admitted_.end() &&
            admission->second.start.node == call->node &&
            variant.runs_on(admission->second.start.device)) {
          slot = admission->second.start.slot;  // the machine held for it (the watch names none)
        }
        auto record = book_.start(variant.job_id, variant, call->node, slot, started_at);
        if (!record) {
          call->result = record.error();
          continue;
        }
        held_jobs_.erase(variant.job_id);
        replan = replan || !held_as_started(variant.job_id, *record);
        Started started{*record, {}};
        if (auto waited = completion_to_bind_.bound(call->node, record->device, started_at)) {
          metrics_.record_completion_to_bind(*waited);
        }
        for (const auto& [key, v] : book_.job(variant.job_id)->variants) {
          // Only in the bound pod's namespace: a job never spans tenants (alloxd/model/pod.h).
          if (key != pod_key(variant.pod) && v.pod.namespace_name == variant.pod.namespace_name) {
            started.unused_variants.push_back(v.pod);
          }
        }
        call->result = std::move(started);
        call->recorded = true;
        started_any = true;
      }
    });
    // The store after the book, outside the book's lock (still the one writer): a start needs
    // the book's slot, and /filter readers need not wait for a commit. One transaction for the
    // group, as durable as its most demanding call. A bind's intent is on disk already, so a
    // failure here is settled from spec.nodeName after a restart.
    if (started_any) {
      Durability durability = Durability::kWritten;
      for (const StartCall* call : group) {
        if (call->recorded && call->durability == Durability::kSynced) {
          durability = Durability::kSynced;
        }
      }
      const Status written = store_->batch(
          [&]() -> Status {
            for (const StartCall* call : group) {
              if (!call->recorded) continue;
              if (auto s = store_->record_start((*call->result)->record, durability); !s) return s;
            }
            return OkStatus();
          },
          durability);
      for (StartCall* call : group) {
        if (!call->recorded) continue;
        if (!written) {
          call->result = written.error();
          continue;
        }
        metrics_.record_time_to_bind(std::max(0.0, started_at - (*call->result)->record.arrival));
      }
    }
  }
  if (replan) wake();
}

bool Planner::held_as_started(const std::string& job_id, const JobRecord& record) const {
  // The plans since its admission have held exactly these machines for the job (hold_admitted),
  // so the plan the next change brings is the one this start would bring: a bind stream wakes
  // no plan of its own. A start anywhere else, or after its hold lapsed, frees or takes
  // machines no plan counted on.
  auto admission = admitted_.find(job_id);
  const BookJob* job = book_.job(job_id);
  if (admission == admitted_.end() || job == nullptr) return false;
  const PlannedStart& held = admission->second.start;
  return held.members.empty() &&
         admission->second.pod_key == record.pod_namespace + "/" + record.pod_name &&
         held.node == record.node && held.device == record.device && held.slot == job->slot &&
         std::chrono::duration<double>(steady_now() - admission->second.at).count() <=
             options_.admission_hold;
}

Status Planner::requeue(const std::string& job_id, Durability durability) {
  {
    std::lock_guard write(write_mu_);
    std::int64_t row = 0;
    PodIdentity ran;
    std::vector<PodIdentity> others;
    {
      std::shared_lock lock(book_mu_);
      const BookJob* job = book_.job(job_id);
      if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
      if (job->record.phase != JobPhase::kRunning) {
        return Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
      }
      row = job->record.row;
      ran = {job->record.pod_name, job->record.pod_namespace, job->record.pod_uid};
      // A gang's other members ran too: none of them is a variant of the run again.
      for (const auto& [key, node] : job->member_nodes) {
        auto member = job->variants.find(key);
        if (member != job->variants.end() && member->second.pod.name != ran.name) {
          others.push_back(member->second.pod);
        }
      }
    }
    // While the run is still running in the store, so that no variant's removal forgets it.
    for (const PodIdentity& pod : others) {
      if (auto s = store_->forget_variant(pod, row, durability); !s) return s;
    }
    if (auto s = store_->record_requeue(row, ran, now(), durability); !s) return s;
    Status queued = write_book([&]() -> Status {
      if (auto r = book_.requeue(job_id); !r) return r.error();
      admitted_.erase(job_id);
      gang_bound_.erase(job_id);
      freed_version_.store(book_.version(), std::memory_order_release);
      return OkStatus();
    });
    if (!queued) return queued;
  }
  wake();
  return OkStatus();
}

Status Planner::complete(const std::string& job_id, Durability durability) {
  {
    std::lock_guard write(write_mu_);
    std::string node;
    DeviceType device;
    std::int64_t row = 0;
    {
      std::shared_lock lock(book_mu_);
      const BookJob* job = book_.job(job_id);
      if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
      if (job->record.phase != JobPhase::kRunning) {
        return Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
      }
      node = job->record.node;
      device = job->record.device;
      row = job->record.row;
    }
    // As the one writer: the store written holding no lock of the book's, then the book.
    double finish = now();
    if (auto s = store_->record_finish(row, finish, durability); !s) return s;
    Status finished = write_book([&]() -> Status {
      if (auto r = book_.finish(job_id, finish); !r) return r.error();
      const bool waiting = book_.queued_count() > 0;
      completion_to_bind_.freed(node, device, finish, waiting);
      admitted_.erase(job_id);
      freed_version_.store(book_.version(), std::memory_order_release);
      return OkStatus();
    });
    if (!finished) return finished;
  }
  wake();
  return OkStatus();
}

std::vector<Status> Planner::complete_all(const std::vector<std::string>& job_ids,
                                          Durability durability) {
  std::vector<Status> outcomes(job_ids.size(), OkStatus());
  if (job_ids.size() == 1) outcomes[0] = complete(job_ids[0], durability);
  if (job_ids.size() <= 1) return outcomes;
  struct Finish {
    std::size_t index;
    std::string node;
    DeviceType device;
    std::int64_t row;
  };
  std::vector<Finish> finishes;
  std::vector<std::pair<std::size_t, std::size_t>> repeats;  // (index, index of the first)
  Status written = OkStatus();
  {
    // As complete(), for the whole burst: the rows read as the one writer, the store written
    // holding no lock of the book's, then the book.
    std::lock_guard write(write_mu_);
    {
      std::shared_lock lock(book_mu_);
      std::unordered_map<std::string_view, std::size_t> first;
      for (std::size_t i = 0; i < job_ids.size(); ++i) {
        const std::string& job_id = job_ids[i];
        if (auto [at, fresh] = first.emplace(job_id, i); !fresh) {
          repeats.emplace_back(i, at->second);
          continue;
        }
        const BookJob* job = book_.job(job_id);
        if (job == nullptr) {
          outcomes[i] = Error{"job " + job_id + " is unknown to allox"};
        } else if (job->record.phase != JobPhase::kRunning) {
          outcomes[i] =
              Error{"job " + job_id + " is " + phase_name(job->record.phase) + ", not running"};
        } else {
          finishes.push_back({i, job->record.node, job->record.device, job->record.row});
        }
      }
    }
    if (finishes.empty()) {
      for (auto [i, original] : repeats) outcomes[i] = outcomes[original];
      return outcomes;
    }
    const double finish = now();
    written = store_->batch(
        [&]() -> Status {
          for (const Finish& f : finishes) {
            if (auto s = store_->record_finish(f.row, finish, durability); !s) return s;
          }
          return OkStatus();
        },
        durability);
    if (written) {
      write_book_in_chunks(finishes.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const Finish& f = finishes[i];
          const std::string& job_id = job_ids[f.index];
          if (auto r = book_.finish(job_id, finish); !r) {
            outcomes[f.index] = r.error();
            continue;
          }
          completion_to_bind_.freed(f.node, f.device, finish, book_.queued_count() > 0);
          admitted_.erase(job_id);
        }
        freed_version_.store(book_.version(), std::memory_order_release);
      });
    }
  }
  if (written) {
    wake();
  } else {
    // The burst's transaction kept nothing: each alone, so one bad row fails only itself.
    for (const Finish& f : finishes) outcomes[f.index] = complete(job_ids[f.index], durability);
  }
  for (auto [i, original] : repeats) outcomes[i] = outcomes[original];
  return outcomes;
}

void Planner::reconcile_binds(const std::vector<PodPlacement>& pods, bool complete) {
  std::map<std::string, const PodPlacement*> by_pod;
  for (const PodPlacement& pod : pods) by_pod[pod_key(pod.pod)] = &pod;
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    std::vector<BindIntent> intents;
    for (const auto& [id, job] : book_.jobs()) {
      if (job.intent) intents.push_back(*job.intent);
    }
    for (const BindIntent& intent : intents) {
      auto it = by_pod.find(pod_key(intent.pod));
      if (it == by_pod.end() && !complete) continue;
      const PodPlacement* seen = it == by_pod.end() ? nullptr : it->second;
      bool bound =
          seen != nullptr && seen->exists && !seen->node_name.empty() &&
          (intent.pod.uid.empty() || seen->pod.uid.empty() || seen->pod.uid == intent.pod.uid);
      const BookJob* job = book_.job(intent.job_id);
      auto variant = job->variants.find(pod_key(intent.pod));
      if (variant == job->variants.end()) bound = false;  // nothing left to start
      if (bound) {
        auto record = book_.start(intent.job_id, variant->second, seen->node_name, -1, now());
        if (record) {
          // Not durable: the store keeps the intent, and the next start-up settles it again.
          (void)store_->record_start(*record);
          continue;
        }
        // The node left the inventory or is full in allox's view: the pod runs there anyway,
        // but allox cannot account for it; the job stays queued rather than double-booked.
      }
      if (store_->drop_bind_intent(intent.job_row)) book_.clear_intent(intent.job_id);
    }
  }
  intents_seen_ = true;
  wake();
}

Status Planner::add_profile(const ProfileReport& report) {
  if (report.device.empty()) return Error{"device: missing"};
  if (report.iterations <= 0) return Error{"iterations: must be > 0"};
  if (!(report.seconds >= kMinJobSeconds && report.seconds <= kMaxJobSeconds)) {
    return Error{"seconds: must be within 0.001 to 2592000 (30 days)"};
  }
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(report.job_id);
    if (job == nullptr) return Error{"job " + report.job_id + " is unknown to allox"};
    if (job->iterations && report.iterations > *job->iterations &&
        report.kind == ProfileSample::Kind::kProgress) {
      return Error{"iterations: more than the job's " + std::to_string(*job->iterations)};
    }
    ProfileSample sample{report.job_id,  report.device, report.kind,    report.iterations,
                         report.seconds, now(),         job->record.row};
    if (auto s = store_->record_profile(sample); !s) return s;
    book_.add_sample(sample);
  }
  wake();
  return OkStatus();
}

}  // namespace allox::extender
