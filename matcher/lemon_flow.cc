#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "matcher/flow_backend.h"

namespace allox::matcher {
namespace {

using Graph = lemon::SmartDigraph;
using Simplex = lemon::NetworkSimplex<Graph, std::int64_t, std::int64_t>;

// With a price hint a job starts with arcs on this many device types (candidate_arcs); pricing
// then adds at most kCandidatesPerJob arcs per job and round.
constexpr std::size_t kCandidateTypes = 5;
constexpr std::size_t kCandidatesPerJob = 4;
// A restricted model may be infeasible, so each job also gets a direct arc to the sink costing
// more than any path of the network (slot_network.h bounds paths by kMaxPathTicks). The optimum
// uses one only if no placement exists; potentials stay below 2^62 + 2^61, inside int64.
constexpr std::int64_t kUnplacedCost = kMaxPathTicks + 1;

// A job's arcs as (slot, cost), type by type and levels ascending, read from an explicit
// network's arrays or computed from an implicit one's times (level × time): the implicit form
// never materialises the J·S arcs, which on distinct machines cost more to build than to solve.
class JobArcs {
 public:
  explicit JobArcs(const SlotNetwork& network) : net_(network) {
    if (net_.implicit == nullptr) return;
    const std::size_t types = net_.implicit->types.size();
    first_.assign(types, 0);
    count_.assign(types, 0);
    for (std::size_t s = net_.slot_count; s-- > 0;) {  // a type's slots are contiguous
      first_[net_.slot_type[s]] = s;
      ++count_[net_.slot_type[s]];
    }
  }

  template <typename Visit>  // visit(slot, cost)
  void for_each(std::size_t j, Visit visit) const {
    if (net_.implicit == nullptr) {
      for (std::size_t a = net_.job_begin[j]; a < net_.job_begin[j + 1]; ++a) {
        visit(net_.arc_slot[a], net_.arc_cost[a]);
      }
      return;
    }
    for (std::size_t t = 0; t < first_.size(); ++t) {
      const std::int64_t time = net_.implicit->time(j, t);
      if (time == kCannotRun) continue;
      for (std::size_t s = first_[t]; s < first_[t] + count_[t]; ++s) {
        visit(s, time * static_cast<std::int64_t>(net_.slot_level[s]));
      }
    }
  }

 private:
  const SlotNetwork& net_;
  std::vector<std::size_t> first_;  // implicit: first slot of each type
  std::vector<std::size_t> count_;
};

// The arcs in the restricted model, per job: few (a handful per job), so a vector each.
struct ModelArc {
  std::size_t slot;
  std::int64_t cost;
};
using Model = std::vector<std::vector<ModelArc>>;

std::size_t model_size(const Model& model) {
  std::size_t n = 0;
  for (const auto& arcs : model) n += arcs.size();
  return n;
}

// Solves the network restricted to the job arcs in `model` (all outlets included).
// Node ids: slots 0..S-1, sink S, jobs S+1..S+J. Job arcs go in a fixed pseudo-random order:
// NetworkSimplex's block search then sees arcs of many jobs and slots in every block, which
// measured 2-3x faster than job-major order. Job arcs get no upper bound: a job's supply of 1
// bounds them, and basic unit arcs keep the spanning tree less degenerate.
struct RestrictedSolve {
  Simplex::ProblemType result = Simplex::INFEASIBLE;
  std::size_t unplaced = 0;           // jobs that took their direct arc to the sink
  std::vector<std::size_t> job_slot;  // the slot each job took (unplaced jobs: none set)
  std::vector<std::int64_t> outlet_flow;
  std::vector<std::int64_t> potential;  // slots, sink, jobs (node id order)
  std::int64_t cost = 0;
};

RestrictedSolve solve_restricted(const SlotNetwork& network, const Model& in_model,
                                 bool escape_arcs) {
  const std::size_t slots = network.slot_count;
  const std::size_t jobs = network.job_count;
  std::vector<std::pair<std::size_t, ModelArc>> model;  // (job, arc), pivot-friendly order
  model.reserve(model_size(in_model));
  for (std::size_t j = 0; j < jobs; ++j) {
    for (const ModelArc& arc : in_model[j]) model.emplace_back(j, arc);
  }
  std::shuffle(model.begin(), model.end(), std::mt19937_64(20261122));

  Graph graph;
  graph.reserveNode(static_cast<int>(network.node_count()));
  graph.reserveArc(
      static_cast<int>(model.size() + network.outlets.size() + (escape_arcs ? jobs : 0)));
  for (std::size_t i = 0; i < network.node_count(); ++i) graph.addNode();
  auto node = [&](std::size_t id) { return graph.nodeFromId(static_cast<int>(id)); };
  const Graph::Node sink = node(slots);
  Graph::ArcMap<std::int64_t> cost(graph);
  Graph::ArcMap<std::int64_t> upper(graph);
  const std::int64_t unbounded = std::numeric_limits<std::int64_t>::max();
  for (const auto& [j, a] : model) {
    const Graph::Arc arc = graph.addArc(node(slots + 1 + j), node(a.slot));
    cost[arc] = a.cost;
    upper[arc] = unbounded;
  }
  for (const Outlet& outlet : network.outlets) {
    const Graph::Arc arc = graph.addArc(node(outlet.slot), sink);
    cost[arc] = outlet.cost;
    upper[arc] = outlet.capacity;
  }
  if (escape_arcs) {
    for (std::size_t j = 0; j < jobs; ++j) {
      const Graph::Arc arc = graph.addArc(node(slots + 1 + j), sink);
      cost[arc] = kUnplacedCost;
      upper[arc] = 1;
    }
  }
  Graph::NodeMap<std::int64_t> supply(graph, 0);
  for (std::size_t j = 0; j < jobs; ++j) supply[node(slots + 1 + j)] = 1;
  supply[sink] = -static_cast<std::int64_t>(jobs);

  Simplex simplex(graph);
  simplex.costMap(cost).upperMap(upper).supplyMap(supply);
  RestrictedSolve out;
  out.result = simplex.run();
  if (out.result != Simplex::OPTIMAL) return out;
  // The cost is summed here, without escape arcs: LEMON's totalCost would overflow on them.
  out.job_slot.assign(jobs, 0);
  for (std::size_t i = 0; i < model.size(); ++i) {
    if (simplex.flow(graph.arcFromId(static_cast<int>(i))) > 0) {
      out.job_slot[model[i].first] = model[i].second.slot;
      out.cost += model[i].second.cost;
    }
  }
  for (std::size_t o = 0; o < network.outlets.size(); ++o) {
    out.outlet_flow.push_back(simplex.flow(graph.arcFromId(static_cast<int>(model.size() + o))));
    out.cost += out.outlet_flow.back() * network.outlets[o].cost;
  }
  if (escape_arcs) {
    const std::size_t first = model.size() + network.outlets.size();
    for (std::size_t j = 0; j < jobs; ++j) {
      out.unplaced +=
          static_cast<std::size_t>(simplex.flow(graph.arcFromId(static_cast<int>(first + j))));
    }
  }
  out.potential.resize(network.node_count());
  for (std::size_t i = 0; i < network.node_count(); ++i)
    out.potential[i] = simplex.potential(node(i));
  return out;
}

// Job arcs whose reduced cost c + π(job) − π(slot) is negative: each would improve the
// restricted optimum (arcs in the model have none at its optimum, so none is added twice). Adds
// each job's kCandidatesPerJob most negative ones to the model (partial pricing keeps the model
// small when a job's hint was far off); returns how many.
std::size_t add_improving_arcs(const SlotNetwork& network, const JobArcs& arcs,
                               const RestrictedSolve& solved, Model& in_model) {
  const std::size_t slots = network.slot_count;
  std::size_t added = 0;
  std::vector<std::pair<std::int64_t, ModelArc>> improving;
  const auto more_negative = [](const auto& x, const auto& y) { return x.first < y.first; };
  for (std::size_t j = 0; j < network.job_count; ++j) {
    const std::int64_t job_potential = solved.potential[slots + 1 + j];
    improving.clear();
    arcs.for_each(j, [&](std::size_t slot, std::int64_t cost) {
      const std::int64_t reduced = cost + job_potential - solved.potential[slot];
      if (reduced < 0) improving.push_back({reduced, {slot, cost}});
    });
    const std::size_t keep = std::min(kCandidatesPerJob, improving.size());
    std::partial_sort(improving.begin(), improving.begin() + static_cast<std::ptrdiff_t>(keep),
                      improving.end(), more_negative);
    for (std::size_t i = 0; i < keep; ++i) in_model[j].push_back(improving[i].second);
    added += keep;
  }
  return added;
}

// For each job, its kCandidateTypes device types that look cheapest at the hinted slot prices,
// each with its best-looking level and the levels on either side. Spreading a job over types
// and levels, rather than taking its cheapest arcs anywhere, keeps single-machine slots from
// being over-subscribed when the hint is rough.
Model candidate_arcs(const SlotNetwork& network, const JobArcs& arcs, const PriceHint& hint) {
  const std::vector<std::int64_t>& price_hint = hint.slot_price;
  Model model(network.job_count);
  struct BestLevel {
    std::int64_t score;
    std::size_t arc, first, end;  // best arc and the type's arcs [first, end) of this job
  };
  std::vector<BestLevel> per_type;
  std::vector<ModelArc> job_arcs;  // this job's, type by type, levels ascending
  for (std::size_t j = 0; j < network.job_count; ++j) {
    per_type.clear();
    job_arcs.clear();
    arcs.for_each(j, [&](std::size_t slot, std::int64_t cost) {
      job_arcs.push_back({slot, cost});
    });
    const std::size_t seed = hint.seed_slot.empty() ? PriceHint::kNoSlot : hint.seed_slot[j];
    for (std::size_t a = 0; a < job_arcs.size(); ++a) {
      const std::size_t slot = job_arcs[a].slot;
      if (slot == seed) model[j].push_back(job_arcs[a]);
      const std::int64_t score = job_arcs[a].cost + price_hint[slot];
      const bool new_type =
          per_type.empty() || network.slot_type[slot] != network.slot_type[job_arcs[a - 1].slot];
      if (new_type) {
        per_type.push_back({score, a, a, a + 1});
      } else {
        BestLevel& best = per_type.back();
        best.end = a + 1;
        if (score < best.score) best.score = score, best.arc = a;
      }
    }
    const std::size_t keep = std::min(kCandidateTypes, per_type.size());
    std::partial_sort(per_type.begin(), per_type.begin() + static_cast<std::ptrdiff_t>(keep),
                      per_type.end(),
                      [](const BestLevel& x, const BestLevel& y) { return x.score < y.score; });
    for (std::size_t i = 0; i < keep; ++i) {
      const BestLevel& best = per_type[i];
      for (std::size_t a = std::max(best.first, best.arc - (best.arc > best.first ? 1 : 0));
           a < std::min(best.end, best.arc + 2); ++a) {
        if (job_arcs[a].slot != seed) model[j].push_back(job_arcs[a]);
      }
    }
  }
  return model;
}

// Every job arc of the network (no hint: one solve of the whole network).
Model all_arcs(const SlotNetwork& network, const JobArcs& arcs) {
  Model model(network.job_count);
  for (std::size_t j = 0; j < network.job_count; ++j) {
    arcs.for_each(j, [&](std::size_t slot, std::int64_t cost) {
      model[j].push_back({slot, cost});
    });
  }
  return model;
}

}  // namespace

Expected<SlotFlow> solve_with_lemon(const SlotNetwork& network, const PriceHint* price_hint) {
  // Column generation: solve over a subset of the job arcs, then price every arc left out
  // against the optimal potentials. No arc with a negative reduced cost left means the
  // restricted optimum is optimal for the whole network (LP duality); otherwise add those arcs
  // and solve again. Without a hint the model is the whole network and one solve suffices.
  const JobArcs arcs(network);
  Model in_model =
      price_hint ? candidate_arcs(network, arcs, *price_hint) : all_arcs(network, arcs);
  // Escape arcs make a restricted model feasible, at the price of big-M pivots: use them only
  // once a restricted model turned out infeasible.
  bool escape_arcs = false;
  RestrictedSolve solved;
  for (;;) {
    solved = solve_restricted(network, in_model, escape_arcs);
    if (solved.result == Simplex::INFEASIBLE) {
      if (price_hint == nullptr || escape_arcs) return SlotFlow{};
      escape_arcs = true;
      continue;
    }
    if (solved.result != Simplex::OPTIMAL) {
      return Error{"LEMON NetworkSimplex: unbounded network (a bug)"};
    }
    if (add_improving_arcs(network, arcs, solved, in_model) == 0) break;
  }
  if (solved.unplaced > 0) return SlotFlow{};  // even the whole network cannot place them

  SlotFlow flow;
  flow.feasible = true;
  flow.job_slot = std::move(solved.job_slot);
  flow.model_arcs = model_size(in_model) + network.outlets.size();
  flow.outlet_flow = std::move(solved.outlet_flow);
  flow.cost = solved.cost;
  const std::int64_t sink_potential = solved.potential[network.slot_count];
  for (std::size_t s = 0; s < network.slot_count; ++s) {
    flow.slot_price.push_back(sink_potential - solved.potential[s]);
  }
  return flow;
}

}  // namespace allox::matcher
