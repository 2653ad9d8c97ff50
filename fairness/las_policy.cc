// las (preemptive): Tiresias-style discretised least-attained-service. Each job's attained
// service (seconds run, 2D in Tiresias: machines x time, and every allox job holds one machine)
// puts it in a priority queue: queue k holds jobs whose service since their last promotion lies
// between thresholds k-1 and k. Lower queues run first, FIFO by arrival within a queue, and a more
// urgent job preempts a less urgent one (fairness/priority_assignment.h). Promotion guards
// against starvation: a queued job that has waited longer than `las_promotion_factor` times its
// attained service returns to the top queue; its service counts from zero again for demotion.
//
// State: the service each job had when it was last promoted, and when it was last seen running
// (waiting counts from then). O(A log A) per decision.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"
#include "fairness/priority_assignment.h"

namespace allox {
namespace {

class LasPolicy : public SchedulingPolicy {
 public:
  explicit LasPolicy(const PolicyOptions& options)
      : thresholds_(options.las_queue_thresholds),
        promotion_factor_(options.las_promotion_factor) {}

  std::string name() const override { return "las"; }
  bool preemptive() const override { return true; }

  Expected<Decision> decide(const ClusterState& state) override {
    struct Ranked {
      std::size_t level;
      double arrival;
      const std::string* id;
      ActiveJob job;
    };
    forget_finished(state);
    std::vector<Ranked> ranked;
    std::vector<std::size_t> running_level(state.running.size());
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      const QueuedJob& q = state.queue[i];
      // Waiting counts from the job's last run: callers may keep queued_since at arrival.
      double waited = state.now - q.queued_since;
      if (auto ran = last_ran_.find(q.job->id); ran != last_ran_.end()) {
        waited = std::min(waited, state.now - ran->second);
      }
      if (q.attained_service > 0 && waited > promotion_factor_ * q.attained_service) {
        promoted_at_[q.job->id] = q.attained_service;
      }
      ranked.push_back(
          {level(q.job->id, q.attained_service), q.job->arrival, &q.job->id, {false, i}});
    }
    for (std::size_t i = 0; i < state.running.size(); ++i) {
      const RunningJob& r = state.running[i];
      last_ran_[r.job->id] = state.now;
      running_level[i] = level(r.job->id, r.attained_service);
      ranked.push_back({running_level[i], r.job->arrival, &r.job->id, {true, i}});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.level, a.arrival, *a.id) < std::tie(b.level, b.arrival, *b.id);
    });
    std::vector<ActiveJob> order;
    for (const Ranked& r : ranked) order.push_back(r.job);
    // Only a job of a strictly higher-priority queue displaces a running one (within a queue,
    // FIFO order decides who starts next, not who stops).
    std::vector<std::size_t> queued_level(state.queue.size());
    for (const Ranked& r : ranked) {
      if (!r.job.running) queued_level[r.job.index] = r.level;
    }
    auto may_displace = [&](std::size_t q, std::size_t r) {
      return queued_level[q] < running_level[r];
    };
    return assign_by_priority(state, order, may_displace);
  }

 private:
  void forget_finished(const ClusterState& state) {
    std::set<std::string> active;
    for (const QueuedJob& q : state.queue) active.insert(q.job->id);
    for (const RunningJob& r : state.running) active.insert(r.job->id);
    auto gone = [&](const auto& entry) { return !active.contains(entry.first); };
    std::erase_if(promoted_at_, gone);
    std::erase_if(last_ran_, gone);
  }

  std::size_t level(const std::string& job, double service) const {
    auto it = promoted_at_.find(job);
    if (it != promoted_at_.end()) service -= it->second;
    std::size_t k = 0;
    while (k < thresholds_.size() && service >= thresholds_[k]) ++k;
    return k;
  }

  std::vector<double> thresholds_;
  double promotion_factor_;
  std::map<std::string, double> promoted_at_;
  std::map<std::string, double> last_ran_;  // last decision time at which the job was running
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_las_policy(const PolicyOptions& options) {
  return std::make_unique<LasPolicy>(options);
}

}  // namespace allox
