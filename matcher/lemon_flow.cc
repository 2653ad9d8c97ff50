#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include <cstdint>

#include "matcher/flow_backend.h"

namespace allox::matcher {

Expected<SlotFlow> solve_with_lemon(const SlotNetwork& network) {
  using Graph = lemon::SmartDigraph;
  Graph graph;
  const std::size_t jobs = network.job_count;
  graph.reserveNode(static_cast<int>(network.node_count()));
  graph.reserveArc(static_cast<int>(network.arc_count()));
  // Node ids: jobs 0..J-1, slots J..J+S-1, sink J+S. Arc ids: job arcs, then outlets.
  for (std::size_t i = 0; i < network.node_count(); ++i) graph.addNode();
  const Graph::Node sink = graph.nodeFromId(static_cast<int>(jobs + network.slot_count));
  Graph::ArcMap<std::int64_t> cost(graph);
  Graph::ArcMap<std::int64_t> upper(graph);
  for (std::size_t j = 0; j < jobs; ++j) {
    const Graph::Node job = graph.nodeFromId(static_cast<int>(j));
    for (std::size_t a = network.job_begin[j]; a < network.job_begin[j + 1]; ++a) {
      const Graph::Arc arc =
          graph.addArc(job, graph.nodeFromId(static_cast<int>(jobs + network.arc_slot[a])));
      cost[arc] = network.arc_cost[a];
      upper[arc] = 1;
    }
  }
  for (const Outlet& outlet : network.outlets) {
    const Graph::Arc arc =
        graph.addArc(graph.nodeFromId(static_cast<int>(jobs + outlet.slot)), sink);
    cost[arc] = outlet.cost;
    upper[arc] = outlet.capacity;
  }
  Graph::NodeMap<std::int64_t> supply(graph, 0);
  for (std::size_t j = 0; j < jobs; ++j) supply[graph.nodeFromId(static_cast<int>(j))] = 1;
  supply[sink] = -static_cast<std::int64_t>(jobs);

  lemon::NetworkSimplex<Graph, std::int64_t, std::int64_t> simplex(graph);
  simplex.costMap(cost).upperMap(upper).supplyMap(supply);
  const auto result = simplex.run();
  SlotFlow flow;
  if (result == simplex.INFEASIBLE) return flow;
  if (result != simplex.OPTIMAL) return Error{"LEMON NetworkSimplex: unbounded network (a bug)"};

  flow.feasible = true;
  flow.job_arc.assign(jobs, 0);
  for (std::size_t j = 0; j < jobs; ++j) {
    for (std::size_t a = network.job_begin[j]; a < network.job_begin[j + 1]; ++a) {
      if (simplex.flow(graph.arcFromId(static_cast<int>(a))) > 0) flow.job_arc[j] = a;
    }
  }
  const std::size_t first_outlet = network.arc_slot.size();
  flow.outlet_flow.reserve(network.outlets.size());
  for (std::size_t o = 0; o < network.outlets.size(); ++o) {
    flow.outlet_flow.push_back(simplex.flow(graph.arcFromId(static_cast<int>(first_outlet + o))));
  }
  flow.cost = simplex.totalCost<std::int64_t>();
  return flow;
}

}  // namespace allox::matcher
