// What the book's own BookChanges do at each step of Planner::apply (planner.h, planner_steps.h):
// the node watch's inventory, a parked job, the retention sweep. None writes a row, so a group of
// them alone opens no transaction.
#include <mutex>
#include <shared_mutex>

#include "alloxd/plan/planner_steps.h"
#include "core/log.h"

namespace allox::extender {

// SetInventory: every job's machines may move (JobBook::set_inventory), so the next plan may
// differ whatever else changed.

void Planner::Steps::check_change(Step& step, const book::SetInventory&) {
  step.replan = true;
  step.then = Step::Then::kBook;
}

Status Planner::Steps::write_change(Step&, const book::SetInventory&) {
  return OkStatus();
}

void Planner::Steps::book_change(Step&, const book::SetInventory& c) {
  p.book_.set_inventory(c.nodes);
  p.freed_version_.store(p.book_.version(), std::memory_order_release);
}

// Park: the planner parks a job while it plans (decide_isolating) and plans again at once, so it
// wakes no plan of its own.

void Planner::Steps::check_change(Step& step, const book::Park& c) {
  if (!claim(step, c.job_id)) return;
  std::shared_lock lock(p.book_mu_);
  if (known_job(step, c.job_id) == nullptr) return;
  step.then = Step::Then::kBook;
}

Status Planner::Steps::write_change(Step&, const book::Park&) {
  return OkStatus();
}

void Planner::Steps::book_change(Step&, const book::Park& c) {
  p.book_.park(c.job_id, c.reason);
  log_warn("job parked: the policy cannot take it", {{"job", c.job_id}, {"reason", c.reason}});
}

// ForgetFinished: before each plan; what it lets go no plan reads, and the holds of jobs gone
// from the queue go with it.

void Planner::Steps::check_change(Step& step, const book::ForgetFinished&) {
  step.then = Step::Then::kBook;
}

Status Planner::Steps::write_change(Step&, const book::ForgetFinished&) {
  return OkStatus();
}

void Planner::Steps::book_change(Step&, const book::ForgetFinished& c) {
  p.book_.forget_finished(c.before);
  p.drop_stale_holds();
}

}  // namespace allox::extender
