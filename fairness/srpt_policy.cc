// srpt (preemptive): at every decision all active jobs are re-ranked by estimated remaining time,
// shortest first, and the shortest ones take the machines (fairness/priority_assignment.h). A
// queued job's remaining time is its least over the device types present; a running job's is
// estimated_finish - now on its machine. Ties go to the running job (a preemption must gain
// something), then to the earlier arrival, then to the id: keys that do not change when a job
// is stopped or started, so two equal jobs never displace each other in turn. This is the
// reference simulator's SRPT, which preempts everything at each event and re-ranks.
#include <algorithm>
#include <limits>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"
#include "fairness/priority_assignment.h"

namespace allox {
namespace {

class SrptPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "srpt"; }
  bool preemptive() const override { return true; }

  Expected<Decision> decide(const ClusterState& state) override {
    struct Ranked {
      double remaining;
      bool queued;  // false sorts first: running jobs win ties
      double arrival;
      const std::string* id;
      ActiveJob job;
    };
    std::map<DeviceType, std::size_t> counts = device_counts(state);
    std::vector<Ranked> ranked;
    for (std::size_t i = 0; i < state.queue.size(); ++i) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& [device, n] : counts) {
        if (auto t = queued_time_on(state.queue[i], device)) best = std::min(best, *t);
      }
      if (best == std::numeric_limits<double>::infinity()) continue;
      const Job& job = *state.queue[i].job;
      ranked.push_back({best, true, job.arrival, &job.id, {false, i}});
    }
    for (std::size_t i = 0; i < state.running.size(); ++i) {
      const RunningJob& r = state.running[i];
      ranked.push_back({std::max(0.0, r.estimated_finish - state.now),
                        false,
                        r.job->arrival,
                        &r.job->id,
                        {true, i}});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.remaining, a.queued, a.arrival, *a.id) <
             std::tie(b.remaining, b.queued, b.arrival, *b.id);
    });
    std::vector<ActiveJob> order;
    for (const Ranked& r : ranked) order.push_back(r.job);
    // Displacing pays only if the newcomer finishes on that machine before the occupant would.
    auto may_displace = [&](std::size_t q, std::size_t r) {
      const RunningJob& running = state.running[r];
      auto t = queued_time_on(state.queue[q], state.machines[running.machine].device);
      return t && *t < running.estimated_finish - state.now;
    };
    return assign_by_priority(state, order, may_displace);
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_srpt_policy() {
  return std::make_unique<SrptPolicy>();
}

}  // namespace allox
