// cluster.yaml loading: the accepted shapes, and one exact message per kind of bad input.
#include "core/cluster_file.h"

#include <gtest/gtest.h>

#include <string>

namespace allox {
namespace {

struct BadInput {
  const char* text;
  const char* error;
};

// Each input has one fault; the message must name the line, the subject and the field.
const BadInput kBadClusters[] = {
    {R"(machines: [{name: g0, device: gpu}]
extra: 1
)",
     R"(cluster.yaml:2: unknown key "extra" (expected one of: machines, pools))"},
    {R"(machines:
  - {name: g0, device: gpu}
  - {name: g0, device: cpu}
)",
     R"(cluster.yaml:3: machine "g0": duplicate machine name)"},
    {R"(machines: []
)",
     R"(cluster.yaml:1: the cluster has no machines: list some under machines or pools)"},
    {R"({}
)",
     R"(cluster.yaml:1: the cluster has no machines: list some under machines or pools)"},
    {R"(machines:
  - {name: g0, device: GPU!}
)",
     R"(cluster.yaml:2: machine "g0": device must be a device type name (lowercase letters, digits, '-', '_', '.'; at most 63 characters), got "GPU!")"},
    {R"(machines:
  - {name: g0}
)",
     R"(cluster.yaml:2: machine "g0": device is required)"},
    {R"(machines:
  - {device: gpu}
)",
     R"(cluster.yaml:2: machines[0]: name is required)"},
    {R"(machines:
  - {name: g0, device: gpu, busy_until: -5}
)",
     R"(cluster.yaml:2: machine "g0": busy_until must be a non-negative number of seconds, got -5)"},
    {R"(machines:
  - {name: g0, device: gpu, busy_until: soon}
)",
     R"(cluster.yaml:2: machine "g0": busy_until must be a non-negative number of seconds, got "soon")"},
    {R"(pools:
  - {device: gpu, count: 0}
)",
     R"(cluster.yaml:2: pools[0]: count must be a whole number from 1 to 100000, got 0)"},
    {R"(pools:
  - {device: gpu, count: 2.5}
)",
     R"(cluster.yaml:2: pools[0]: count must be a whole number from 1 to 100000, got 2.5)"},
    {R"(pools:
  - {device: gpu, count: 200000}
)",
     R"(cluster.yaml:2: pools[0]: count must be a whole number from 1 to 100000, got 200000)"},
    {R"(pools:
  - {device: gpu}
)",
     R"(cluster.yaml:2: pools[0]: count is required)"},
    {R"(pools:
  - {device: gpu, count: 2, prefix: g}
machines:
  - {name: g1, device: cpu}
)",
     R"(cluster.yaml:2: machine "g1": duplicate machine name)"},
    {R"(pools:
  - {device: gpu, count: 2, colour: red}
)",
     R"(cluster.yaml:2: pools[0]: unknown key "colour" (expected one of: device, count, prefix, start, busy_until, units))"},
    {R"(machines: {name: g0}
)",
     R"(cluster.yaml:1: machines must be a list, got a mapping)"},
    {R"(just some text
)",
     R"(cluster.yaml:1: expected a mapping with keys machines, pools, got "just some text")"},
    {R"(machines: [ {name: g0, device: gpu}
)",
     R"(cluster.yaml:2: not valid YAML or JSON: end of sequence flow not found)"},
    {R"(- a
- b
)",
     R"(cluster.yaml:1: expected a mapping with keys machines, pools, got a list)"},
    // A key given twice, at any depth: yaml-cpp would keep the first silently.
    {R"(pools:
  - {device: gpu, count: 2}
pools:
  - {device: cpu, count: 4}
)",
     R"(cluster.yaml:3: duplicate key "pools" (first on line 1))"},
    {R"(machines:
  - {name: g0, device: gpu, device: cpu}
  - name: g1
    device: gpu
    name: g2
)",
     "cluster.yaml:2: duplicate key \"device\" (first on line 2)\n"
     "cluster.yaml:5: duplicate key \"name\" (first on line 3)"},
    {R"(machines:
  - gpu-0
)",
     R"(cluster.yaml:2: machines[0]: expected a mapping with keys name, device, busy_until, units, got "gpu-0")"},
    // Nodes of several units.
    {R"(machines:
  - {name: dgx, device: v100, units: 0}
)",
     R"(cluster.yaml:2: machine "dgx": units must be a whole number from 1 to 64, got 0)"},
    {R"(pools:
  - {device: v100, count: 2, units: 1000000}
)",
     R"(cluster.yaml:2: pools[0]: units must be a whole number from 1 to 64, got 1000000)"},
    {R"(pools:
  - {device: v100, count: 2, units: four}
)",
     R"(cluster.yaml:2: pools[0]: units must be a whole number from 1 to 64, got "four")"},
    {R"(pools:
  - {device: v100, count: 50000, units: 4}
)",
     R"(cluster.yaml:2: pools[0]: count x units must be at most 100000 devices)"},
    // Each pool within its limit, the cluster past it: refused before the machines are made,
    // and said once.
    {R"(pools:
  - {device: gpu, count: 100000}
  - {device: cpu, count: 1, prefix: c}
  - {device: tpu, count: 100000}
)",
     R"(cluster.yaml:3: pools[1]: the cluster would have over 100000 devices (machines and pools )"
     R"(together, each unit counted))"},
    {R"(machines:
  - {name: n, device: gpu, busy_until: 1e308}
)",
     R"(cluster.yaml:2: machine "n": busy_until must be at most 9e+12, got 1e308)"},
    {R"(machines:
  - {name: n/0, device: v100}
  - {name: n, device: v100, units: 2}
)",
     R"(cluster.yaml:3: machine "n/0": duplicate machine name)"},
};

TEST(ClusterFile, RejectsEachBadInputWithItsExactMessage) {
  for (const BadInput& bad : kBadClusters) {
    auto cluster = parse_cluster(bad.text, "cluster.yaml");
    ASSERT_FALSE(cluster.ok()) << bad.text;
    EXPECT_EQ(bad.error, cluster.message()) << bad.text;
  }
}

TEST(ClusterFile, ExpandsPoolsAndKeepsMachineFields) {
  auto cluster = parse_cluster(R"(
machines:
  - {name: tpu-0, device: tpu}
  - {name: cpu-busy, device: cpu, busy_until: 120}
pools:
  - {device: gpu, count: 3, prefix: g-, start: 1}
  - {device: cpu, count: 2}
)",
                               "cluster.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.message();
  std::vector<std::string> names;
  for (const Machine& m : cluster->machines) names.push_back(m.name);
  EXPECT_EQ((std::vector<std::string>{"tpu-0", "cpu-busy", "g-1", "g-2", "g-3", "cpu-0", "cpu-1"}),
            names);
  EXPECT_EQ(120, cluster->machines[1].busy_until);
  EXPECT_EQ(0, cluster->machines[0].busy_until);
  EXPECT_EQ((std::vector<DeviceType>{"cpu", "gpu", "tpu"}), cluster->device_types());
  EXPECT_EQ(3u, cluster->count("gpu"));
  EXPECT_EQ(3u, cluster->count("cpu"));
}

TEST(ClusterFile, UnitsMakeNodesOfSeveralMachines) {
  auto cluster = parse_cluster(R"(
machines:
  - {name: dgx, device: v100, units: 3, busy_until: 5}
  - {name: solo, device: k80, units: 1}
pools:
  - {device: p100, count: 2, units: 2}
)",
                               "cluster.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.message();
  std::vector<std::string> names, nodes;
  for (const Machine& m : cluster->machines) {
    names.push_back(m.name);
    nodes.push_back(m.node);
  }
  EXPECT_EQ((std::vector<std::string>{"dgx/0", "dgx/1", "dgx/2", "solo", "p100-0/0", "p100-0/1",
                                      "p100-1/0", "p100-1/1"}),
            names);
  // units: 1 is a plain machine, a node of its own.
  EXPECT_EQ(
      (std::vector<std::string>{"dgx", "dgx", "dgx", "", "p100-0", "p100-0", "p100-1", "p100-1"}),
      nodes);
  EXPECT_EQ(5, cluster->machines[2].busy_until);
  EXPECT_EQ(3u, cluster->count("v100"));
  EXPECT_EQ((std::vector<std::size_t>{0, 0, 0, 1, 2, 2, 3, 3}), node_ids(cluster->machines));
}

TEST(ClusterFile, JsonGivesTheSameClusterAsYaml) {
  auto yaml = parse_cluster("pools: [{device: gpu, count: 2}]\nmachines: [{name: c, device: cpu}]",
                            "c.yaml");
  auto json = parse_cluster(
      R"({"machines": [{"name": "c", "device": "cpu"}], "pools": [{"device": "gpu", "count": 2}]})",
      "c.json");
  ASSERT_TRUE(yaml.ok() && json.ok());
  ASSERT_EQ(yaml->machines.size(), json->machines.size());
  for (std::size_t i = 0; i < yaml->machines.size(); ++i) {
    EXPECT_EQ(yaml->machines[i].name, json->machines[i].name);
    EXPECT_EQ(yaml->machines[i].device, json->machines[i].device);
  }
}

TEST(ClusterFile, ReportsEveryProblemNotJustTheFirst) {
  auto cluster = parse_cluster(R"(machines:
  - {name: a, device: gpu, busy_until: -1}
  - {name: b, device: "GPU"}
)",
                               "cluster.yaml");
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(
      "cluster.yaml:2: machine \"a\": busy_until must be a non-negative number of seconds, got -1\n"
      "cluster.yaml:3: machine \"b\": device must be a device type name (lowercase letters, "
      "digits, '-', '_', '.'; at most 63 characters), got \"GPU\"",
      cluster.message());
}

}  // namespace
}  // namespace allox
