#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/successive_shortest_path_nonnegative_weights.hpp>
#include <cstdint>
#include <vector>

#include "matcher/flow_backend.h"

namespace allox::matcher {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, std::int64_t,
        boost::property<boost::edge_residual_capacity_t, std::int64_t,
                        boost::property<boost::edge_reverse_t, Traits::edge_descriptor,
                                        boost::property<boost::edge_weight_t, std::int64_t>>>>>;
using Edge = Traits::edge_descriptor;

// Adds u→v and its zero-capacity reverse twin, as the Boost flow algorithms require.
Edge add_arc(Graph& graph, std::size_t u, std::size_t v, std::int64_t capacity, std::int64_t cost) {
  const Edge forward = boost::add_edge(u, v, graph).first;
  const Edge backward = boost::add_edge(v, u, graph).first;
  boost::put(boost::edge_capacity, graph, forward, capacity);
  boost::put(boost::edge_capacity, graph, backward, 0);
  boost::put(boost::edge_weight, graph, forward, cost);
  boost::put(boost::edge_weight, graph, backward, -cost);
  boost::put(boost::edge_reverse, graph, forward, backward);
  boost::put(boost::edge_reverse, graph, backward, forward);
  return forward;
}

}  // namespace

Expected<SlotFlow> solve_with_boost(const SlotNetwork& network) {
  const std::size_t jobs = network.job_count;
  // Vertices: jobs, slots, sink, then a source feeding every job.
  const std::size_t sink = jobs + network.slot_count;
  const std::size_t source = sink + 1;
  Graph graph(source + 1);
  std::vector<Edge> source_arcs;
  std::vector<Edge> job_arcs;
  std::vector<Edge> outlet_arcs;
  source_arcs.reserve(jobs);
  job_arcs.reserve(network.arc_slot.size());
  outlet_arcs.reserve(network.outlets.size());
  for (std::size_t j = 0; j < jobs; ++j) source_arcs.push_back(add_arc(graph, source, j, 1, 0));
  for (std::size_t j = 0; j < jobs; ++j) {
    for (std::size_t a = network.job_begin[j]; a < network.job_begin[j + 1]; ++a) {
      job_arcs.push_back(add_arc(graph, j, jobs + network.arc_slot[a], 1, network.arc_cost[a]));
    }
  }
  for (const Outlet& outlet : network.outlets) {
    outlet_arcs.push_back(add_arc(graph, jobs + outlet.slot, sink, outlet.capacity, outlet.cost));
  }

  boost::successive_shortest_path_nonnegative_weights(graph, source, sink);

  auto capacity = boost::get(boost::edge_capacity, graph);
  auto residual = boost::get(boost::edge_residual_capacity, graph);
  auto carried = [&](const Edge& e) { return capacity[e] - residual[e]; };
  SlotFlow flow;
  for (const Edge& e : source_arcs) {
    if (carried(e) != 1) return flow;  // not every job reached the sink: too few levels
  }
  flow.feasible = true;
  flow.job_arc.assign(jobs, 0);
  for (std::size_t j = 0; j < jobs; ++j) {
    for (std::size_t a = network.job_begin[j]; a < network.job_begin[j + 1]; ++a) {
      if (carried(job_arcs[a]) > 0) {
        flow.job_arc[j] = a;
        flow.cost += network.arc_cost[a];
      }
    }
  }
  for (std::size_t o = 0; o < network.outlets.size(); ++o) {
    flow.outlet_flow.push_back(carried(outlet_arcs[o]));
    flow.cost += flow.outlet_flow.back() * network.outlets[o].cost;
  }
  return flow;
}

}  // namespace allox::matcher
