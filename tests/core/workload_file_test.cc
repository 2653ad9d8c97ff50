// jobs.yaml loading: the accepted shapes, exact messages for bad input, and the cross-check
// of a workload against a cluster.
#include "core/workload_file.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster_file.h"

namespace allox {
namespace {

struct BadInput {
  const char* text;
  const char* error;
};

const BadInput kBadWorkloads[] = {
    {R"(jobs:
  - {id: j1, time: {gpu: 10}}
  - {id: j1, time: {gpu: 20}}
)",
     R"(jobs.yaml:3: job "j1": duplicate job id)"},
    {R"(jobs:
  - {id: j1, time: {gpu: -3}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got -3)"},
    {R"(jobs:
  - {id: j1, time: {gpu: 0}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got 0)"},
    {R"(jobs:
  - {id: j1, time: {gpu: fast}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got "fast")"},
    {R"(jobs:
  - {id: j1, time: {}}
)",
     R"(jobs.yaml:2: job "j1": time is empty: the job can run on no device)"},
    {R"(jobs:
  - {id: j1}
)",
     R"(jobs.yaml:2: job "j1": time is required (device type -> seconds, e.g. {gpu: 60}))"},
    {R"(jobs:
  - {id: j1, time: 30}
)",
     R"(jobs.yaml:2: job "j1": time must map device types to seconds (e.g. {gpu: 60}), got 30)"},
    {R"(jobs:
  - {id: j1, time: {gpu: 10}, priority: 3}
)",
     R"(jobs.yaml:2: job "j1": unknown key "priority" (expected one of: id, user, arrival, time, iterations, family, units))"},
    {R"(jobs:
  - {time: {gpu: 10}}
)",
     R"(jobs.yaml:2: jobs[0]: id is required)"},
    {R"(jobs:
  - {id: j1, arrival: -1, time: {gpu: 10}}
)",
     R"(jobs.yaml:2: job "j1": arrival must be a non-negative number of seconds, got -1)"},
    {R"(jobs:
  - {id: j1, iterations: 0, time: {gpu: 10}}
)",
     R"(jobs.yaml:2: job "j1": iterations must be a whole number from 1 to 1000000000000, got 0)"},
    {R"(jobs:
  - {id: j1, time: {Gpu: 10}}
)",
     R"(jobs.yaml:2: job "j1": device type in time must be a device type name (lowercase letters, digits, '-', '_', '.'; at most 63 characters), got "Gpu")"},
    {R"(users:
  - {name: a, weight: 0}
jobs: []
)",
     R"(jobs.yaml:2: user "a": weight must be a positive number of shares, got 0)"},
    {R"(users:
  - {name: a}
  - {name: a}
)",
     R"(jobs.yaml:3: user "a": duplicate user name)"},
    {R"(users:
  - {weight: 2}
)",
     R"(jobs.yaml:2: users[0]: name is required)"},
    {R"(jobs:
  - {id: j1, time: {gpu: .inf}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got ".inf")"},
    {R"(jobs:
  - {id: j1, time: {gpu: 1e400}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got "1e400")"},
    {R"(jobs:
  - {id: j1, time: {gpu: 1e308}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be at most 9e+12, got 1e308)"},
    {R"(jobs:
  - {id: j1, arrival: 9000000000001, time: {gpu: 1}}
)",
     R"(jobs.yaml:2: job "j1": arrival must be at most 9e+12, got 9000000000001)"},
    {R"(a: &a [x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c]
jobs: [*d, *d, *d, *d, *d, *d, *d, *d]
)",
     R"(jobs.yaml:1: aliases expand the document past 1398 nodes; write the repeated parts out )"
     R"(or drop the aliases)"},
    {R"(jobs: 5
)",
     R"(jobs.yaml:1: jobs must be a list, got 5)"},
    {R"(jobs:
  - {id: j1, time: {gpu: [1,2]}}
)",
     R"(jobs.yaml:2: job "j1": time.gpu must be a positive number of seconds, got a list)"},
    {R"(jobs:
  - {id: j1, user: [a], time: {gpu: 3}}
)",
     R"(jobs.yaml:2: job "j1": user must be a non-empty string, got a list)"},
    {R"("unterminated
)",
     R"(jobs.yaml:1: expected a mapping with keys users, jobs, got "unterminated ")"},
    {R"({"jobs": [{"id": "j1", "time": {"gpu": -3}}]}
)",
     R"(jobs.yaml:1: job "j1": time.gpu must be a positive number of seconds, got -3)"},
    {R"(jobs:
  - {id: j1, time: {gpu: 3}, units: 0}
)",
     R"(jobs.yaml:2: job "j1": units must be a whole number from 1 to 64, got 0)"},
    {R"(jobs:
  - {id: j1, time: {gpu: 3}, units: 1e9}
)",
     R"(jobs.yaml:2: job "j1": units must be a whole number from 1 to 64, got 1e9)"},
};

TEST(WorkloadFile, RejectsEachBadInputWithItsExactMessage) {
  for (const BadInput& bad : kBadWorkloads) {
    auto workload = parse_workload(bad.text, "jobs.yaml");
    ASSERT_FALSE(workload.ok()) << bad.text;
    EXPECT_EQ(bad.error, workload.message()) << bad.text;
  }
}

// A jobs file without a job is a mistake for everything that plans or checks its jobs, refused
// naming the file, line and field; a list of bad jobs is reported as such. A file read for its
// users' weights alone may list none.
TEST(WorkloadFile, AFileWithoutJobsIsRefusedUnlessOnlyItsUsersAreWanted) {
  const BadInput cases[] = {
      {"jobs: []\n", "jobs.yaml:1: the jobs file has no jobs: list at least one under jobs"},
      {"users:\n  - {name: a, weight: 2}\njobs: []\n",
       "jobs.yaml:3: the jobs file has no jobs: list at least one under jobs"},
      {"users:\n  - {name: a, weight: 2}\n",
       "jobs.yaml:1: the jobs file has no jobs: list at least one under jobs"},
      {"{\"jobs\": []}", "jobs.yaml:1: the jobs file has no jobs: list at least one under jobs"},
      {"jobs:\n  - {time: {gpu: 1}}\n", "jobs.yaml:2: jobs[0]: id is required"},
  };
  for (const BadInput& bad : cases) {
    EXPECT_EQ(bad.error, parse_workload(bad.text, "jobs.yaml").message()) << bad.text;
  }
  auto users = parse_workload("users:\n  - {name: a, weight: 2}\n", "users.yaml",
                              JobList::kMayBeEmpty);
  ASSERT_TRUE(users.ok()) << users.message();
  EXPECT_TRUE(users->jobs.empty());
  EXPECT_EQ(2, users->weight_of("a"));
}

// Names end up in JSON outputs, which hold UTF-8 only, and on terminals.
TEST(WorkloadFile, RefusesNamesThatAreNotText) {
  EXPECT_EQ("jobs.yaml:2: job \"j\xe9\": id must be UTF-8 text without control characters",
            parse_workload("jobs:\n  - {id: j\xe9, time: {gpu: 1}}\n", "jobs.yaml").message());
  EXPECT_EQ("jobs.yaml:2: job \"j\": user must be UTF-8 text without control characters",
            parse_workload("jobs:\n  - {id: j, user: \"a\\x01\", time: {gpu: 1}}\n",
                           "jobs.yaml")
                .message());
}

// yaml-cpp stops at its depth limit; the message says so instead of "bad file".
TEST(WorkloadFile, DeepNestingIsRefusedByItsDepth) {
  const std::string nested = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ("jobs.yaml:1: not valid YAML or JSON: lists or mappings nested over 499 levels deep",
            parse_workload(nested, "jobs.yaml").message());
}

TEST(WorkloadFile, ReadsJobsUsersAndDefaults) {
  auto workload = parse_workload(R"(
users:
  - {name: alice, weight: 2}
jobs:
  - {id: j1, user: alice, arrival: 5, time: {cpu: 97, gpu: 49}, iterations: 1000, family: resnet}
  - {id: 2, user: bob, time: {gpu: 7.5}}
  - {id: j3, time: {cpu: 1}}
)",
                                 "jobs.yaml");
  ASSERT_TRUE(workload.ok()) << workload.message();
  ASSERT_EQ(3u, workload->jobs.size());
  const Job& j1 = workload->jobs[0];
  EXPECT_EQ("j1", j1.id);
  EXPECT_EQ("alice", j1.user);
  EXPECT_EQ(5, j1.arrival);
  EXPECT_EQ(97, j1.time.at("cpu"));
  EXPECT_EQ(49, j1.time.at("gpu"));
  EXPECT_EQ(1000, j1.iterations.value());
  EXPECT_EQ("resnet", j1.family);
  EXPECT_EQ((std::pair<DeviceType, double>{"gpu", 49}), j1.fastest());
  EXPECT_EQ("2", workload->jobs[1].id);
  EXPECT_EQ(std::nullopt, workload->jobs[1].time_on("cpu"));
  EXPECT_EQ("default", workload->jobs[2].user);
  EXPECT_EQ(0, workload->jobs[2].arrival);
  // Undeclared users appear with weight 1, declared ones keep theirs.
  EXPECT_EQ(2, workload->weight_of("alice"));
  EXPECT_EQ(1, workload->weight_of("bob"));
  EXPECT_EQ(3u, workload->users.size());
}

TEST(WorkloadFile, CrossCheckNamesUnknownDeviceTypes) {
  auto cluster = parse_cluster("pools: [{device: gpu, count: 2}, {device: cpu, count: 1}]", "c");
  auto workload = parse_workload(
      "jobs:\n  - {id: a, time: {gpu: 1}}\n  - {id: b, time: {tpu: 3, gpu: 4}}\n", "jobs.yaml");
  ASSERT_TRUE(cluster.ok() && workload.ok());
  auto status = check_runnable(*cluster, *workload, "jobs.yaml");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ("jobs.yaml: job \"b\": unknown device type \"tpu\" in time (the cluster has: cpu, gpu)",
            status.message());
  workload->jobs.pop_back();
  EXPECT_TRUE(check_runnable(*cluster, *workload, "jobs.yaml").ok());
}

TEST(WorkloadFile, CrossCheckNamesAJobWiderThanEveryNode) {
  auto cluster =
      parse_cluster("pools: [{device: v100, count: 2, units: 4}, {device: k80, count: 1}]", "c");
  auto workload = parse_workload(
      "jobs:\n  - {id: a, time: {v100: 1}, units: 4}\n  - {id: b, time: {v100: 3, k80: 9}, "
      "units: 8}\n",
      "jobs.yaml");
  ASSERT_TRUE(cluster.ok() && workload.ok()) << cluster.message() << workload.message();
  EXPECT_EQ(4, workload->jobs[0].units);
  auto status = check_runnable(*cluster, *workload, "jobs.yaml");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(
      "jobs.yaml: job \"b\": units 8 is more than any node of its device types offers "
      "(largest: 4)",
      status.message());
}

}  // namespace
}  // namespace allox
