// Bind intents' group commit: concurrent binds share one synced transaction, the first of them
// committing the group for all (record_bind_intent).
#include "alloxd/store/store.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "alloxd/store/statement.h"

namespace allox::extender {

// The group new intents join while another group is being committed; its members wait.
struct Store::IntentGroup {
  std::vector<BindIntent> intents;
  std::vector<Status> outcomes;  // one per intent, once done
  bool done = false;
  // Its members wait here, not on one condition of the store: the end of a commit wakes the
  // members it wrote and one member of the next group (its leader), not every waiting bind.
  std::condition_variable cv;
};

Status Store::record_bind_intent(const BindIntent& intent) {
  std::unique_lock lock(group_mu_);
  if (!forming_) forming_ = std::make_shared<IntentGroup>();
  std::shared_ptr<IntentGroup> group = forming_;
  const std::size_t mine = group->intents.size();
  group->intents.push_back(intent);
  if (hooks_.joined) hooks_.joined(group->intents.size());
  // Leader/follower: whoever finds no commit running commits the whole forming group (its own
  // intent is in it), so while one fsync runs, the intents that arrive meanwhile gather into
  // the next group, and each group costs one fsync however large it is.
  while (!group->done) {
    if (committing_) {
      group->cv.wait(lock);
      continue;
    }
    committing_ = true;
    std::shared_ptr<IntentGroup> taken = std::move(forming_);  // == group: ours is not done
    lock.unlock();
    std::vector<Status> outcomes = commit_intents(taken->intents);
    lock.lock();
    taken->outcomes = std::move(outcomes);
    taken->done = true;
    committing_ = false;
    // Every member of the group written is done; the group formed meanwhile needs one of its
    // members to commit it (the others wait for that commit).
    taken->cv.notify_all();
    if (forming_) forming_->cv.notify_one();
  }
  return group->outcomes[mine];
}

std::uint64_t Store::intent_commits() const {
  std::lock_guard lock(group_mu_);
  return intent_commits_;
}

void Store::set_intent_hooks(IntentHooks hooks) {
  std::lock_guard lock(group_mu_);
  hooks_ = std::move(hooks);
}

std::vector<Status> Store::commit_intents(const std::vector<BindIntent>& intents) {
  std::function<void(std::size_t)> hook;
  {
    std::lock_guard lock(group_mu_);
    ++intent_commits_;
    hook = hooks_.before_commit;
  }
  if (hook) hook(intents.size());
  auto insert = [this](const BindIntent& intent) {
    Statement s(*statements_,
                "INSERT OR REPLACE INTO bind_intents (job_row, job_id, pod_namespace, pod_name, "
                "pod_uid, node, device, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    s.bind_all(intent.job_row, intent.job_id, intent.pod.namespace_name, intent.pod.name,
               intent.pod.uid, intent.node, intent.device, intent.at);
    return s.run("record bind intent of " + intent.job_id);
  };
  std::lock_guard lock(mu_);
  Status all = transaction([&]() -> Status {
    for (const BindIntent& intent : intents) {
      if (auto s = insert(intent); !s) return s;
    }
    return OkStatus();
  });
  if (all || intents.size() == 1) return std::vector<Status>(intents.size(), all);
  // One bad intent must not fail the others: each alone, in its own synced transaction.
  std::vector<Status> outcomes;
  outcomes.reserve(intents.size());
  for (const BindIntent& intent : intents) {
    outcomes.push_back(transaction([&] { return insert(intent); }));
  }
  return outcomes;
}

}  // namespace allox::extender
