// The planner's book writes of the pods it is told of: a new run or a variant registered (alone
// or a watch burst at once), a variant gone, a queued job removed by an admin.
#include "alloxd/plan/planner.h"

#include <string>
#include <unordered_map>

namespace allox::extender {

bool Planner::admitted_as_another(const JobVariant& variant) const {
  // A rolled-back gang's member is on its way out (the controller deletes it): it never rejoins.
  if (!variant.pod.uid.empty() && rolled_back_.count(variant.pod.uid)) return true;
  auto it = admitted_.find(variant.job_id);
  return it != admitted_.end() && it->second.pod_key != pod_key(variant.pod);
}

Expected<Planner::VariantChange> Planner::write_variant(
    const JobVariant& variant, const std::unordered_map<std::string, JobRecord>& new_runs,
    Durability durability) {
  VariantChange change;
  change.variant = &variant;
  if (auto run = new_runs.find(variant.job_id); run != new_runs.end()) {
    change.kind = JobBook::Change::kVariant;  // its run is new in this batch, not in the book yet
    change.record = run->second;
  } else {
    std::shared_lock lock(book_mu_);
    // A sibling of a job admitted as another variant (seen again before its deletion) stays out.
    if (admitted_as_another(variant)) return change;
    change.kind = book_.classify(variant);
    if (change.kind == JobBook::Change::kVariant) {
      change.record = book_.job(variant.job_id)->record;
    }
  }
  switch (change.kind) {
    case JobBook::Change::kNone:
      break;
    case JobBook::Change::kNewRun: {
      change.record.id = variant.job_id;
      change.record.user = variant.user;
      change.record.arrival = now();
      // The run's row and its first variant in one transaction: no job without its pod.
      auto row = store_->record_arrival(change.record, variant, durability);
      if (!row) return row.error();
      change.record.row = *row;
      break;
    }
    case JobBook::Change::kVariant:
      if (auto s = store_->record_variant(change.record.row, variant, durability); !s) {
        return s.error();
      }
      break;
  }
  return change;
}

void Planner::apply_variant(const VariantChange& change) {
  if (change.kind == JobBook::Change::kNewRun) {
    book_.add_run(change.record, *change.variant);
  } else if (change.kind == JobBook::Change::kVariant) {
    book_.add_variant(*change.variant);
  }
}

Expected<std::uint64_t> Planner::register_variant(const JobVariant& variant,
                                                  Durability durability) {
  {
    std::shared_lock lock(book_mu_);
    if (admitted_as_another(variant) || book_.classify(variant) == JobBook::Change::kNone) {
      return std::uint64_t{0};
    }
  }
  // A change. As the one writer (write_mu_) the book read here is the one the change applies
  // to; the store is written holding no lock of the book, so other filters, the controller and
  // the planner's snapshot never wait on this pod's SQLite commit.
  std::lock_guard write(write_mu_);
  auto change = write_variant(variant, {}, durability);
  if (!change) return change.error();
  if (change->kind == JobBook::Change::kNone) return std::uint64_t{0};
  const std::uint64_t version = write_book([&] {
    apply_variant(*change);
    return book_.version();
  });
  wake();
  return version;
}

std::vector<Status> Planner::register_variants(const std::vector<JobVariant>& variants,
                                               Durability durability) {
  std::vector<Status> outcomes(variants.size(), OkStatus());
  std::vector<VariantChange> changes;
  Status written = OkStatus();
  if (variants.size() > 1) {
    // As register_variant, for the whole batch in one store transaction, then the book.
    std::lock_guard write(write_mu_);
    std::unordered_map<std::string, JobRecord> new_runs;
    written = store_->batch(
        [&]() -> Status {
          for (const JobVariant& variant : variants) {
            auto change = write_variant(variant, new_runs, durability);
            if (!change) return change.error();
            if (change->kind == JobBook::Change::kNone) continue;
            if (change->kind == JobBook::Change::kNewRun) new_runs[variant.job_id] = change->record;
            changes.push_back(std::move(*change));
          }
          return OkStatus();
        },
        durability);
    if (written) {
      write_book_in_chunks(changes.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) apply_variant(changes[i]);
      });
    }
  }
  if (variants.size() > 1 && written) {
    if (!changes.empty()) wake();
    return outcomes;
  }
  // One variant, or a failed batch (nothing of it kept): each alone, outside write_mu_.
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (auto registered = register_variant(variants[i], durability); !registered) {
      outcomes[i] = registered.error();
    }
  }
  return outcomes;
}

Status Planner::remove_variant(const PodIdentity& pod) {
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job_of_pod(pod.namespace_name, pod.name);
    if (job == nullptr) return OkStatus();
    if (job->record.phase != JobPhase::kQueued) return OkStatus();  // a run keeps its pods
    const std::string job_id = job->record.id;
    if (auto s = store_->forget_variant(pod, job->record.row, Durability::kWritten); !s) return s;
    book_.remove_variant(pod.namespace_name, pod.name);
    if (book_.job(job_id) == nullptr) admitted_.erase(job_id);
  }
  wake();
  return OkStatus();
}

Status Planner::remove(const std::string& job_id) {
  {
    std::lock_guard write(write_mu_);
    std::unique_lock lock(book_mu_);
    const BookJob* job = book_.job(job_id);
    if (job == nullptr) return Error{"job " + job_id + " is unknown to allox"};
    const double at = now();
    // The book says why not (running, done, a bind in doubt) before anything is written.
    if (job->record.phase != JobPhase::kQueued || job->intent) {
      return book_.remove(job_id, at).error();
    }
    if (auto s = store_->record_removal(job->record.row, at); !s) return s;
    if (auto r = book_.remove(job_id, at); !r) return r.error();
  }
  wake();
  return OkStatus();
}

}  // namespace allox::extender
