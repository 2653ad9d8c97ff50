// ExtenderService::timeline(): the status page's history, kept apart from the verbs.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "alloxd/service.h"

namespace allox::extender {

namespace {

std::string machine_row(const std::string& node, const DeviceType& device, int index) {
  return node + " " + device + " " + std::to_string(index);
}

}  // namespace

Timeline ExtenderService::timeline(double window_seconds) const {
  Timeline t;
  const QueueView view = queue();
  t.now = view.now;
  t.from = view.now - window_seconds;
  double horizon = view.now;
  std::vector<MachineSlot> slots;
  std::map<std::string, std::vector<std::string>> rows_of;  // running job -> its units' rows
  planner_->read([&](const JobBook& book) {
    slots = book.slots();
    for (const MachineSlot& slot : slots) {
      t.machines.push_back(machine_row(slot.node, slot.device, slot.index));
      if (!slot.running_job.empty()) rows_of[slot.running_job].push_back(t.machines.back());
    }
    for (const auto& [id, job] : book.jobs()) {
      const JobRecord& r = job.record;
      if (r.phase != JobPhase::kDone || r.finish < t.from || r.node.empty()) continue;
      t.bars.push_back({machine_row(r.node, r.device, std::max(0, r.machine)), r.id, r.user,
                        r.start, r.finish, TimelineBar::Kind::kDone});
    }
    return 0;
  });
  for (const JobView& job : view.running) {
    const JobRecord& r = job.record;
    const double end = view.now + job.remaining.value_or(0);
    horizon = std::max(horizon, end);
    // A job of k units is a bar on each of its k machines.
    std::vector<std::string> rows = rows_of[r.id];
    if (rows.empty()) rows.push_back(machine_row(r.node, r.device, std::max(0, r.machine)));
    for (const std::string& row : rows) {
      t.bars.push_back({row, r.id, r.user, r.start, end, TimelineBar::Kind::kRunning});
    }
  }
  // The plan's next starts: a job starting now on its planned machine; the others at their
  // estimated start on a row of their own (the plan names no machine for them yet).
  const std::string next_row = "queued: est. starts";
  bool any_wait = false;
  for (const JobView& job : view.queued) {
    double seconds = 0;
    if (job.planned_start) {
      for (const VariantView& v : job.variants)
        if (v.device == job.planned_start->device) seconds = v.estimate.seconds;
      int index = 0;
      if (job.planned_start->slot >= 0 && job.planned_start->slot < static_cast<int>(slots.size()))
        index = slots[job.planned_start->slot].index;
      t.bars.push_back({machine_row(job.planned_start->node, job.planned_start->device, index),
                        job.record.id, job.record.user, view.now, view.now + seconds,
                        TimelineBar::Kind::kPlanned});
      horizon = std::max(horizon, view.now + seconds);
    } else if (job.planned_wait && job.planned_wait->estimated_start) {
      const double at = *job.planned_wait->estimated_start;
      t.bars.push_back(
          {next_row, job.record.id, job.record.user, at, at, TimelineBar::Kind::kPlanned});
      horizon = std::max(horizon, at);
      any_wait = true;
    }
  }
  if (any_wait) t.machines.push_back(next_row);
  // Show the past window and as much of the plan as a quarter of the width allows.
  t.to = view.now + std::min(horizon - view.now, window_seconds / 3);
  if (t.to <= view.now) t.to = view.now + window_seconds / 12;
  t.shares = planner_->shares_since(t.from);
  return t;
}

}  // namespace allox::extender
