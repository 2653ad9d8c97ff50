// fifo: queued jobs in order of queued_since (ties by id); each takes the idle machine on which
// it is fastest. A job that can run on no idle machine is passed over rather than blocking the
// queue, so FIFO never leaves a machine idle that a queued job could use.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"

namespace allox {
namespace {

class FifoPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "fifo"; }

  Expected<Decision> decide(const ClusterState& state) override {
    std::vector<std::size_t> order(state.queue.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(state.queue[a].queued_since, state.queue[a].job->id) <
             std::tie(state.queue[b].queued_since, state.queue[b].job->id);
    });
    IdleMachines idle(state);
    Decision decision;
    for (std::size_t i : order) {
      if (!idle.any()) break;
      auto best = idle.best_for(state.queue[i]);
      if (!best) continue;
      decision.start.push_back(
          {state.queue[i].job->id, *idle.take(best->first, state.queue[i].job->units)});
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_fifo_policy() {
  return std::make_unique<FifoPolicy>();
}

}  // namespace allox
