#include "matcher/price_hints.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace allox::matcher {
namespace {

// Spreads per-machine level prices over the network's (type, level) slots: the mean over the
// type's machines, and the type's mean residual beyond a machine's queue.
std::vector<std::int64_t> slot_prices_from_machines(
    const SlotNetwork& network, std::size_t type_count,
    const std::vector<std::size_t>& machine_type,
    const std::vector<std::vector<double>>& machine_prices,
    const std::vector<std::int64_t>& machine_residual) {
  std::vector<std::int64_t> hint(network.slot_count, 0);
  std::vector<std::vector<std::size_t>> machines_of_type(type_count);
  for (std::size_t m = 0; m < machine_type.size(); ++m)
    machines_of_type[machine_type[m]].push_back(m);
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    const auto& machines = machines_of_type[network.slot_type[s]];
    if (machines.empty()) continue;
    const std::size_t level = network.slot_level[s];
    double sum = 0;
    for (std::size_t m : machines) {
      const auto& prices = machine_prices[m];
      sum += level <= prices.size() ? prices[level - 1] : static_cast<double>(machine_residual[m]);
    }
    hint[s] = static_cast<std::int64_t>(sum / static_cast<double>(machines.size()));
  }
  return hint;
}

}  // namespace

PriceHint carry_prices(const SlotNetwork& network, const SlotNetwork& solved,
                       const std::vector<std::int64_t>& solved_prices) {
  std::vector<std::vector<std::int64_t>> price_of_type;
  for (std::size_t s = 0; s < solved.slot_count; ++s) {
    const std::size_t t = solved.slot_type[s];
    if (price_of_type.size() <= t) price_of_type.resize(t + 1);
    price_of_type[t].push_back(solved_prices[s]);
  }
  std::vector<std::int64_t> hint(network.slot_count, 0);
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    const std::size_t t = network.slot_type[s];
    if (t >= price_of_type.size() || price_of_type[t].empty()) continue;
    const std::vector<std::int64_t>& prices = price_of_type[t];
    // Levels beyond the solved ones cost what the deepest solved level cost.
    hint[s] = prices[std::min(network.slot_level[s], prices.size()) - 1];
  }
  return {std::move(hint), {}};
}

void recall_prices(const PreparedProblem& problem, const SlotNetwork& network,
                   const PriceMemory& memory, PriceHint& hint) {
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    const auto price = memory.price(problem.types[network.slot_type[s]], network.slot_level[s]);
    if (price) hint.slot_price[s] = *price;
  }
}

void remember_prices(const PreparedProblem& problem, const SlotNetwork& network,
                     const std::vector<std::int64_t>& slot_price, PriceMemory& memory,
                     const std::vector<std::int64_t>* outlet_flow) {
  std::vector<std::vector<std::int64_t>> by_type(problem.types.size());
  std::vector<std::size_t> keep(problem.types.size(), 1);  // levels to remember per type
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    by_type[network.slot_type[s]].push_back(slot_price[s]);  // levels ascending
    if (outlet_flow == nullptr) continue;
    for (std::size_t o = network.slot_outlet_begin[s]; o < network.slot_outlet_begin[s + 1]; ++o) {
      if ((*outlet_flow)[o] > 0) {
        keep[network.slot_type[s]] =
            std::max(keep[network.slot_type[s]], by_type[network.slot_type[s]].size() + 1);
      }
    }
  }
  if (outlet_flow != nullptr) {
    for (std::size_t t = 0; t < by_type.size(); ++t) {
      if (by_type[t].size() > keep[t]) by_type[t].resize(keep[t]);
    }
  }
  for (std::size_t t = 0; t < by_type.size(); ++t) {
    if (!by_type[t].empty()) memory.remember(problem.types[t], std::move(by_type[t]));
  }
}

PriceHint greedy_prices(const PreparedProblem& problem, const SlotNetwork& network) {
  const std::size_t types = problem.types.size();
  // A job goes to the machine of its type that frees up first: one min-heap of (clock, machine)
  // per device type, not per group (a busy cluster has a group per machine: 40,000 groups made
  // this O(J·G) loop most of a solve at 5,000 nodes).
  using Clock = std::pair<std::int64_t, std::size_t>;
  std::vector<std::priority_queue<Clock, std::vector<Clock>, std::greater<>>> free_at(types);
  std::vector<std::size_t> machine_type;
  std::vector<std::int64_t> machine_residual;
  for (const MachineGroup& group : problem.groups) {
    for (std::size_t i = 0; i < group.machines.size(); ++i) {
      free_at[group.type].emplace(group.residual_ticks, machine_type.size());
      machine_type.push_back(group.type);
      machine_residual.push_back(group.residual_ticks);
    }
  }
  std::vector<std::pair<std::int64_t, std::size_t>> order;  // shortest job first
  for (std::size_t j = 0; j < problem.job_count; ++j) {
    std::int64_t shortest = std::numeric_limits<std::int64_t>::max();
    for (std::size_t t = 0; t < types; ++t) {
      if (problem.time(j, t) != kCannotRun) shortest = std::min(shortest, problem.time(j, t));
    }
    order.emplace_back(shortest, j);
  }
  std::sort(order.begin(), order.end());
  std::vector<std::vector<std::int64_t>> queue(machine_type.size());
  std::vector<std::vector<std::size_t>> queued_jobs(machine_type.size());  // in run order
  for (const auto& [unused, j] : order) {
    std::size_t best_type = 0;
    std::int64_t best_finish = std::numeric_limits<std::int64_t>::max();
    for (std::size_t t = 0; t < types; ++t) {
      const std::int64_t time = problem.time(j, t);
      if (time == kCannotRun || free_at[t].empty()) continue;
      const std::int64_t finish = free_at[t].top().first + time;
      if (finish < best_finish) best_finish = finish, best_type = t;
    }
    const std::size_t machine = free_at[best_type].top().second;
    free_at[best_type].pop();
    free_at[best_type].emplace(best_finish, machine);
    queue[machine].push_back(problem.time(j, best_type));
    queued_jobs[machine].push_back(j);
  }
  // The schedule as slots: the i-th of n jobs on a machine of type t sits at level n - i.
  std::vector<std::size_t> first_slot(types, PriceHint::kNoSlot);
  std::vector<std::size_t> levels(types, 0);
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    const std::size_t t = network.slot_type[s];
    first_slot[t] = std::min(first_slot[t], s);
    levels[t] = std::max(levels[t], network.slot_level[s]);
  }
  std::vector<std::size_t> seed(problem.job_count, PriceHint::kNoSlot);
  for (std::size_t m = 0; m < queued_jobs.size(); ++m) {
    const std::size_t n = queued_jobs[m].size();
    const std::size_t t = machine_type[m];
    for (std::size_t i = 0; i < n; ++i) {
      if (n - i <= levels[t]) seed[queued_jobs[m][i]] = first_slot[t] + (n - i) - 1;
    }
  }
  std::vector<std::vector<double>> machine_prices(machine_type.size());
  for (std::size_t m = 0; m < machine_type.size(); ++m) {
    std::vector<std::int64_t>& times = queue[m];
    std::sort(times.begin(), times.end(), std::greater<>());  // level 1 (last) first
    std::vector<double>& prices = machine_prices[m];
    prices.resize(times.size());
    double price = static_cast<double>(machine_residual[m]);
    for (std::size_t k = times.size(); k-- > 0;) {
      const double next = k + 1 < times.size() ? static_cast<double>(times[k + 1]) : 0;
      price += (static_cast<double>(times[k]) + next) / 2;
      prices[k] = price;
    }
  }
  return {slot_prices_from_machines(network, types, machine_type, machine_prices, machine_residual),
          std::move(seed)};
}

}  // namespace allox::matcher
