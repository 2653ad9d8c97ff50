#include "alloxd/verbs/gang_gather.h"

#include <algorithm>

namespace allox::extender {

std::string GangGather::arrive(const std::string& gang, Member member, int size,
                               std::chrono::milliseconds wait, const BindAll& bind_all) {
  std::unique_lock lock(mu_);
  std::shared_ptr<Gathering>& slot = gathering_[gang];
  if (!slot) {
    slot = std::make_shared<Gathering>();
    slot->deadline = std::chrono::steady_clock::now() + wait;
  }
  const std::shared_ptr<Gathering> mine = slot;
  const std::string pod = member.pod;
  auto same = std::find_if(mine->members.begin(), mine->members.end(),
                           [&](const Member& m) { return m.pod == pod; });
  if (same != mine->members.end()) {
    *same = std::move(member);
  } else {
    mine->members.push_back(std::move(member));
  }
  if (static_cast<int>(mine->members.size()) >= size) {
    // The last one in binds them all, on its own thread, with the lock let go.
    gathering_.erase(gang);
    mine->binding = true;
    lock.unlock();
    Outcomes outcomes = bind_all(mine->members);
    lock.lock();
    mine->outcomes = std::move(outcomes);
    mine->done = true;
    cv_.notify_all();
    return mine->outcomes[pod];
  }
  ++mine->waiting;
  cv_.wait_until(lock, mine->deadline, [&] { return mine->done; });
  if (!mine->done && !mine->binding) {
    mine->done = true;
    mine->timed_out = true;
    if (auto it = gathering_.find(gang); it != gathering_.end() && it->second == mine) {
      gathering_.erase(it);
    }
    cv_.notify_all();
  }
  cv_.wait(lock, [&] { return mine->done; });  // a bind_all under way is waited for
  --mine->waiting;
  if (mine->timed_out) {
    return "gang " + gang + ": " + std::to_string(mine->members.size()) + " of " +
           std::to_string(size) + " members reached /bind within " + std::to_string(wait.count()) +
           " ms; none was bound (all are tried again)";
  }
  return mine->outcomes[pod];
}

std::size_t GangGather::waiting() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [gang, g] : gathering_) n += g->waiting;
  return n;
}

}  // namespace allox::extender
