// drf's dominant share over a stated resource vector (fairness/drf_share.h), worked by hand.
#include "fairness/drf_share.h"

#include <gtest/gtest.h>

#include "fairness/policy.h"
#include "state_builder.h"

namespace allox {
namespace {

using testing::starts;
using testing::StateBuilder;
using Starts = std::vector<std::string>;

// The reference simulator's machines on its workload: a CPU node of 32 cores and 16 GB, a GPU
// with 2 GB.
const MachineCapacity kReferenceMachines = {
    {"cpu", {{"cores", 32}, {"memory_gb", 16}}},
    {"gpu", {{"gpus", 1}, {"gpu_memory_gb", 2}}}};

Job holding(const DeviceType& device, std::map<std::string, double> amounts) {
  Job job;
  job.id = "j";
  job.time = {{device, 1}};
  job.holds[device] = std::move(amounts);
  return job;
}

TEST(DrfShareTest, ResourceVectorTakesTheLargestResourceShare) {
  // 4 CPU nodes and 4 GPUs. Two CPU jobs holding 5 GB and 16 GB and one GPU job: cores
  // 64/128 = 1/2, memory 21/64, GPUs 1/4, GPU memory 2/8. Dominant: cores, 1/2, which is also
  // the devices vector's max(2/4, 1/4).
  const std::map<DeviceType, std::size_t> counts = {{"cpu", 4}, {"gpu", 4}};
  DrfHoldings resources(kReferenceMachines, counts);
  const MachineCapacity devices_vector;
  DrfHoldings devices(devices_vector, counts);
  for (DrfHoldings* h : {&resources, &devices}) {
    h->add(holding("cpu", {{"cores", 32}, {"memory_gb", 5}}), "cpu");
    h->add(holding("cpu", {{"cores", 32}, {"memory_gb", 16}}), "cpu");
    h->add(holding("gpu", {{"gpus", 1}, {"gpu_memory_gb", 2}}), "gpu");
  }
  EXPECT_DOUBLE_EQ(0.5, resources.dominant_share());
  EXPECT_DOUBLE_EQ(0.5, devices.dominant_share());
}

TEST(DrfShareTest, MemoryDominatesWhenAJobHoldsLittleOfTheRest) {
  // 2 CPU nodes: a job holding 8 cores and 12 GB has cores 8/64 and memory 12/32 = 3/8.
  const std::map<DeviceType, std::size_t> counts = {{"cpu", 2}, {"gpu", 2}};
  DrfHoldings h(kReferenceMachines, counts);
  h.add(holding("cpu", {{"cores", 8}, {"memory_gb", 12}}), "cpu");
  EXPECT_DOUBLE_EQ(3.0 / 8.0, h.dominant_share());
}

TEST(DrfShareTest, AJobThatStatesNothingHoldsItsWholeMachine) {
  // No holds for the GPU: the job takes a GPU's whole {1, 2 GB}, 1/2 of 2 GPUs; units multiply.
  const std::map<DeviceType, std::size_t> counts = {{"cpu", 2}, {"gpu", 4}};
  DrfHoldings h(kReferenceMachines, counts);
  Job job;
  job.time = {{"gpu", 1}};
  job.units = 2;
  h.add(job, "gpu");
  EXPECT_DOUBLE_EQ(0.5, h.dominant_share());
}

TEST(DrfShareTest, SmallestFittingMachinesHoldTheLargestDemandOfEachResource) {
  Job a = holding("cpu", {{"cores", 32}, {"memory_gb", 5}});
  Job b = holding("cpu", {{"cores", 16}, {"memory_gb", 16}});
  b.holds["gpu"] = {{"gpus", 1}, {"gpu_memory_gb", 2}};
  Job none;
  const MachineCapacity got = smallest_fitting_machines({&a, &b, &none});
  EXPECT_EQ(kReferenceMachines, got);
  EXPECT_TRUE(smallest_fitting_machines({&none}).empty());
}

// 2 GPUs and 2 CPU nodes. alice runs a small job on cpu-0 (8 cores, 4 GB), bob one on gpu-0;
// both queue a job whose fastest type is the GPU, bob's older.
StateBuilder small_cpu_job() {
  StateBuilder b(10);
  b.machine("gpu-0", "gpu").machine("gpu-1", "gpu").machine("cpu-0", "cpu").machine("cpu-1", "cpu");
  b.running("ra", "alice", "cpu-0", 0, {{"gpu", 10}, {"cpu", 20}});
  b.running("rb", "bob", "gpu-0", 0, {{"gpu", 10}, {"cpu", 20}});
  b.queued("b1", "bob", 1, {{"gpu", 4}, {"cpu", 8}});
  b.queued("a1", "alice", 2, {{"gpu", 5}, {"cpu", 50}});
  b.holds("ra", "cpu", {{"cores", 8}, {"memory_gb", 4}});
  b.holds("rb", "gpu", {{"gpus", 1}, {"gpu_memory_gb", 2}});
  return b;
}

Starts decide_drf(StateBuilder& b, const MachineCapacity& capacity) {
  PolicyOptions options;
  options.drf_capacity = capacity;
  auto made = make_policy("drf", options);
  EXPECT_TRUE(made.ok()) << made.message();
  auto decision = (*made)->decide(b.state());
  EXPECT_TRUE(decision.ok()) << decision.message();
  return starts(*decision, b.state());
}

TEST(DrfPolicyTest, DevicesVectorCountsAWholeNodeForASmallJob) {
  // Devices: alice 1/2 (1 of 2 CPU nodes), bob 1/2 (1 of 2 GPUs); tie, bob's job waited longer:
  // b1 takes gpu-1 (bob 1); alice's a1 wants a GPU, none idle: the round stops.
  StateBuilder b = small_cpu_job();
  EXPECT_EQ((Starts{"b1@gpu-1"}), decide_drf(b, {}));
}

TEST(DrfPolicyTest, ReferenceVectorCountsWhatTheJobHolds) {
  // Resources: alice max(8/64 cores, 4/32 memory) = 1/8, bob max(1/2, 2/4) = 1/2. alice first:
  // a1 takes gpu-1 (alice 1/2); tie, bob's job waited longer: b1 wants a GPU, none idle: stop.
  StateBuilder b = small_cpu_job();
  EXPECT_EQ((Starts{"a1@gpu-1"}), decide_drf(b, kReferenceMachines));
}

}  // namespace
}  // namespace allox
