// The planner's writers of the pods it is told of, thin callers of apply() (planner_steps.cc says
// what each change does): a new run or a variant registered (alone or a watch burst at once), a
// variant gone, a queued job removed by an admin.
#include <string>
#include <unordered_map>

#include "alloxd/plan/planner.h"

namespace allox::extender {

bool Planner::admitted_as_another(const JobVariant& variant) const {
  // A rolled-back gang's member is on its way out (the controller deletes it): it never rejoins.
  if (!variant.pod.uid.empty() && rolled_back_.count(variant.pod.uid)) return true;
  auto it = admitted_.find(variant.job_id);
  return it != admitted_.end() && it->second.pod_key != pod_key(variant.pod);
}

Expected<std::uint64_t> Planner::register_variant(const JobVariant& variant,
                                                  Durability durability) {
  {
    // Most calls (a pod's every /filter, the watch's every update) change nothing: answered
    // under a shared lock, without joining a group commit.
    std::shared_lock lock(book_mu_);
    if (admitted_as_another(variant) || book_.classify(variant) == JobBook::Change::kNone) {
      return std::uint64_t{0};
    }
  }
  const BookChange change = book::RegisterVariant{variant, durability};
  Applied applied = std::move(apply_changes({&change, 1}).front());
  if (!applied.status) return applied.status.error();
  return applied.version;
}

std::vector<Status> Planner::register_variants(const std::vector<JobVariant>& variants,
                                               Durability durability) {
  // As register_variant: the pods the book has as they are (a burst's status updates) are
  // answered under one shared lock, the others applied as one batch.
  std::vector<Status> outcomes(variants.size(), OkStatus());
  std::vector<std::size_t> changing;
  {
    std::shared_lock lock(book_mu_);
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (!admitted_as_another(variants[i]) &&
          book_.classify(variants[i]) != JobBook::Change::kNone) {
        changing.push_back(i);
      }
    }
  }
  if (changing.empty()) return outcomes;
  std::vector<BookChange> changes;
  changes.reserve(changing.size());
  for (std::size_t i : changing)
    changes.emplace_back(book::RegisterVariant{variants[i], durability});
  std::vector<Status> applied = apply(changes);
  for (std::size_t k = 0; k < changing.size(); ++k) outcomes[changing[k]] = std::move(applied[k]);
  return outcomes;
}

Status Planner::remove_variant(const PodIdentity& pod) {
  const BookChange change = book::RemoveVariant{pod};
  return apply({&change, 1}).front();
}

Status Planner::remove(const std::string& job_id) {
  const BookChange change = book::RemoveJob{job_id};
  return apply({&change, 1}).front();
}

}  // namespace allox::extender
