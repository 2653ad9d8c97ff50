#include "extender/plan.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

namespace allox::extender {

Plan make_plan(const PlanInput& input, const Expected<Decision>& decision,
               const std::vector<MachineSlot>& slots, double solve_seconds) {
  Plan plan;
  plan.version = input.version;
  plan.solved_at = input.state.now;
  plan.solve_seconds = solve_seconds;
  plan.unrunnable.insert(input.unrunnable.begin(), input.unrunnable.end());
  if (!decision) {
    plan.error = decision.message();
    return plan;
  }
  for (const Placement& placement : decision->start) {
    if (placement.machine >= slots.size()) continue;  // a policy bug; the job stays queued
    const MachineSlot& slot = slots[placement.machine];
    plan.starts[placement.job_id] = {slot.node, slot.device, static_cast<int>(placement.machine)};
  }
  struct Waiting {
    double estimated_start;
    double arrival;
    const std::string* id;
  };
  std::vector<Waiting> waiting;
  for (const QueuedJob& queued : input.state.queue) {
    const std::string& id = queued.job->id;
    if (plan.starts.count(id)) continue;
    auto estimate = decision->estimated_start.find(id);
    double start = estimate == decision->estimated_start.end()
                       ? std::numeric_limits<double>::infinity()
                       : estimate->second;
    waiting.push_back({start, queued.job->arrival, &id});
  }
  std::sort(waiting.begin(), waiting.end(), [](const Waiting& a, const Waiting& b) {
    return std::tie(a.estimated_start, a.arrival, *a.id) <
           std::tie(b.estimated_start, b.arrival, *b.id);
  });
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    PlannedWait wait{static_cast<int>(i + 1), static_cast<int>(waiting.size()), std::nullopt};
    if (waiting[i].estimated_start != std::numeric_limits<double>::infinity()) {
      wait.estimated_start = waiting[i].estimated_start;
    }
    plan.waiting[*waiting[i].id] = wait;
  }
  return plan;
}

void PlanBoard::publish(std::shared_ptr<const Plan> plan) {
  {
    std::lock_guard lock(mu_);
    latest_ = std::move(plan);
  }
  published_.notify_all();
}

std::shared_ptr<const Plan> PlanBoard::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

std::shared_ptr<const Plan> PlanBoard::wait_for(
    std::uint64_t version, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  published_.wait_until(lock, deadline, [&] { return latest_->version >= version; });
  return latest_;
}

}  // namespace allox::extender
