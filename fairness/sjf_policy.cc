// sjf: repeatedly start the globally shortest (queued job, idle device type) pair, as the
// reference AlloX simulator does; a job therefore lands on its fastest device when one is idle
// and on a slower one only if that is still the shortest pair left. Ties: queued_since, then id.
// O(Q * D log(Q * D)).
#include <algorithm>
#include <tuple>
#include <vector>

#include "fairness/cluster_view.h"
#include "fairness/policies.h"

namespace allox {
namespace {

class SjfPolicy : public SchedulingPolicy {
 public:
  std::string name() const override { return "sjf"; }

  Expected<Decision> decide(const ClusterState& state) override {
    struct Pair {
      double time;
      std::size_t job;
      DeviceType device;
    };
    IdleMachines idle(state);
    std::vector<Pair> pairs;
    for (const auto& [device, count] : device_counts(state)) {
      if (idle.count(device) == 0) continue;
      for (std::size_t i = 0; i < state.queue.size(); ++i) {
        if (auto t = queued_time_on(state.queue[i], device)) pairs.push_back({*t, i, device});
      }
    }
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) {
      const QueuedJob& qa = state.queue[a.job];
      const QueuedJob& qb = state.queue[b.job];
      return std::tie(a.time, qa.queued_since, qa.job->id) <
             std::tie(b.time, qb.queued_since, qb.job->id);
    });
    std::vector<bool> started(state.queue.size(), false);
    Decision decision;
    for (const Pair& p : pairs) {
      if (!idle.any()) break;
      if (started[p.job]) continue;
      std::optional<std::size_t> machine = idle.take(p.device, state.queue[p.job].job->units);
      if (!machine) continue;
      started[p.job] = true;
      decision.start.push_back({state.queue[p.job].job->id, *machine});
    }
    return decision;
  }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_sjf_policy() {
  return std::make_unique<SjfPolicy>();
}

}  // namespace allox
