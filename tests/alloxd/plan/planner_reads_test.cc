// What a reader of alloxd/plan/planner.h's book waits for. read_registered is the one shared lock
// a /filter of a registered pod takes: it reads only for a variant that needs no registration, so
// the filter's answer and the check that nothing needs writing come from the same book. The
// batched writers change the book a chunk at a time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloxd/plan/planner.h"
#include "tests/alloxd/testing/test_support.h"

namespace allox::extender {
namespace {

struct Books {
  testing::ScratchDir dir;
  ExtenderConfig config =
      testing::make_config({{"n0", {{"gpu", 1}, {"cpu", 1}}}}, dir.file("state.db"));
  Metrics metrics;
  std::unique_ptr<Planner> planner = open();

  std::unique_ptr<Planner> open() {
    auto planner = testing::open_fifo_planner(config, metrics);
    if (planner) planner->start();
    return planner;
  }
  JobVariant variant(const std::string& pod, const std::string& resource) const {
    auto read = read_job_variant(testing::make_pod("lab", pod, resource, {{"allox.io/job", "a"}}),
                                 config.devices);
    EXPECT_TRUE(read.ok()) << read.message();
    return *read;
  }
  // Whether read_registered ran its read (which answers true).
  bool reads(const JobVariant& v) const {
    int calls = 0;
    const bool answered = planner->read_registered(v, [&](const JobBook& book) {
      ++calls;
      return book.job(v.job_id) != nullptr;
    });
    EXPECT_EQ(answered, calls == 1);
    return calls == 1;
  }
};

TEST(PlannerReadsTest, AVariantIsReadUnderOneLockOnlyWhenItNeedsNoRegistration) {
  Books books;
  ASSERT_NE(nullptr, books.planner);
  const JobVariant gpu = books.variant("a-gpu", "nvidia.com/gpu");
  const JobVariant cpu = books.variant("a-cpu", "cpu");

  EXPECT_FALSE(books.reads(gpu));  // its job is not in the book: the filter registers it
  ASSERT_TRUE(books.planner->register_variant(gpu, Durability::kWritten).ok());
  EXPECT_TRUE(books.reads(gpu));
  EXPECT_FALSE(books.reads(cpu));  // a variant its job does not have yet

  // The read's own answer is returned: false sends the filter down the path that may wait.
  EXPECT_FALSE(books.planner->read_registered(gpu, [](const JobBook&) { return false; }));

  // Once the job is admitted as its GPU variant, the CPU one stays out: nothing to register.
  books.planner->solve_now();
  auto plan = books.planner->latest_plan();
  ASSERT_EQ(1u, plan->starts.count(gpu.job_id));
  ASSERT_TRUE(books.planner->admit(gpu.job_id, "lab/a-gpu", plan->starts.at(gpu.job_id)).ok());
  EXPECT_TRUE(books.reads(cpu));
}

// A new plan can admit thousands of jobs at once. They reach the book a chunk at a time, each
// under its own hold of the lock, so a /filter never waits for the whole burst: the book's
// version moves once per chunk, and a reader between two chunks sees whole admissions.
TEST(PlannerReadsTest, ABurstOfAdmissionsReachesTheBookAChunkAtATime) {
  Books books;
  ASSERT_NE(nullptr, books.planner);
  constexpr std::size_t kJobs = 3 * Planner::kBookWriteChunk + 8;  // 3 full chunks and a part
  std::vector<JobVariant> variants;
  std::vector<Planner::AdmitRequest> admissions;
  for (std::size_t j = 0; j < kJobs; ++j) {
    const std::string name = "p" + std::to_string(j);
    auto read = read_job_variant(testing::make_pod("lab", name, "nvidia.com/gpu",
                                                   {{"allox.io/job", "j" + std::to_string(j)}}),
                                 books.config.devices);
    ASSERT_TRUE(read.ok()) << read.message();
    variants.push_back(*read);
    admissions.push_back({read->job_id, "lab/" + name, PlannedStart{"n0", "gpu", 0}});
  }
  for (const Status& s : books.planner->register_variants(variants, Durability::kWritten)) {
    ASSERT_TRUE(s.ok()) << s.message();
  }
  auto version = [&] { return books.planner->read([](const JobBook& b) { return b.version(); }); };
  const std::uint64_t before = version();
  for (const Status& s : books.planner->admit_all(admissions)) ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(before + 4, version());
  for (const Planner::AdmitRequest& a : admissions) {
    EXPECT_EQ(a.pod_key, books.planner->admitted_as(a.job_id).value_or("(none)"));
  }
}

// A reconcile reads whether the admission it would make stands already, instead of queueing a
// change behind the next group commit. The read must say "stands" exactly when admitting again
// would change nothing: the same variant and start, the hold not lapsed, the job still queued.
TEST(PlannerReadsTest, AnAdmissionStandsAsMadeUntilItsHoldLapsesOrItsJobStarts) {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config(
      {{"n0", {{"gpu", 1}, {"cpu", 1}}}, {"n1", {{"gpu", 1}}}}, dir.file("state.db"));
  config.policy = "fifo";
  Metrics metrics;
  auto steady = std::make_shared<std::chrono::steady_clock::time_point>();
  PlannerOptions options;
  options.inventory = config.nodes;
  options.steady_now = [steady] { return *steady; };
  auto made = Planner::create(config, make_policy(config.policy, {}).value(), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  Planner& planner = **made;
  planner.start();
  auto variant = [&](const std::string& pod, const std::string& resource) {
    auto read = read_job_variant(testing::make_pod("lab", pod, resource, {{"allox.io/job", "a"}}),
                                 config.devices);
    EXPECT_TRUE(read.ok()) << read.message();
    return *read;
  };
  const JobVariant gpu = variant("a-gpu", "nvidia.com/gpu");
  const JobVariant cpu = variant("a-cpu", "cpu");
  ASSERT_TRUE(planner.register_variant(gpu, Durability::kWritten).ok());
  ASSERT_TRUE(planner.register_variant(cpu, Durability::kWritten).ok());
  planner.solve_now();
  const auto plan = planner.latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/a"));
  const PlannedStart start = plan->starts.at("lab/a");
  // The variant the plan starts, and the job's other one.
  const bool on_gpu = gpu.runs_on(start.device);
  const JobVariant& chosen = on_gpu ? gpu : cpu;
  const std::string pod = on_gpu ? "lab/a-gpu" : "lab/a-cpu";
  const std::string other = on_gpu ? "lab/a-cpu" : "lab/a-gpu";
  PlannedStart elsewhere = start;
  elsewhere.slot = start.slot + 1;
  auto version = [&] { return planner.read([](const JobBook& book) { return book.version(); }); };

  EXPECT_FALSE(planner.admission_stands("lab/a", pod, start));  // not admitted yet
  ASSERT_TRUE(planner.admit("lab/a", pod, start).ok());
  EXPECT_TRUE(planner.admission_stands("lab/a", pod, start));
  EXPECT_FALSE(planner.admission_stands("lab/a", other, start));
  EXPECT_FALSE(planner.admission_stands("lab/a", pod, elsewhere));
  EXPECT_FALSE(planner.admission_stands("lab/b", "lab/b-gpu", start));
  // Where it stands, admitting again changes nothing: the book's version does not move.
  const auto before = version();
  ASSERT_TRUE(planner.admit("lab/a", pod, start).ok());
  EXPECT_EQ(before, version());

  *steady += std::chrono::seconds(61);  // admission_hold is 60 s
  EXPECT_FALSE(planner.admission_stands("lab/a", pod, start));
  // Made again as it was, it is the same commitment: its time still runs from the first.
  ASSERT_TRUE(planner.admit("lab/a", pod, start).ok());
  EXPECT_FALSE(planner.admission_stands("lab/a", pod, start));

  ASSERT_TRUE(planner.record_start(chosen, start.node, start.slot, Durability::kWritten).ok());
  EXPECT_FALSE(planner.admission_stands("lab/a", pod, start));  // it runs
  planner.stop();
}

// An admitted job's hold takes it out of the plan's queue; the constraints of the jobs behind it
// must stay theirs. A job that selects pool=b, queued behind one admitted on n0, is planned by
// FIFO onto n1 (pool=a): its own selector moves it to n2, not the admitted job's (none).
TEST(PlannerReadsTest, AHeldAdmissionLeavesTheQueuedJobsTheirOwnConstraints) {
  testing::ScratchDir dir;
  ExtenderConfig config = testing::make_config(
      {{"n0", {{"gpu", 1}}}, {"n1", {{"gpu", 1}}}, {"n2", {{"gpu", 1}}}}, dir.file("state.db"));
  config.policy = "fifo";
  Metrics metrics;
  PlannerOptions options;
  options.inventory = config.nodes;
  auto made = Planner::create(config, make_policy(config.policy, {}).value(), metrics, options);
  ASSERT_TRUE(made.ok()) << made.message();
  Planner& planner = **made;
  std::vector<NodeInventory> nodes = config.nodes;
  for (NodeInventory& node : nodes) {
    node.facts.name = node.name;
    node.facts.labels["pool"] = node.name == "n2" ? "b" : "a";
  }
  planner.set_inventory(nodes);
  planner.start();
  auto variant = [&](const std::string& job, const nlohmann::json& selector) {
    nlohmann::json pod =
        testing::make_pod("lab", job + "-gpu", "nvidia.com/gpu", {{"allox.io/job", job}});
    if (!selector.empty()) pod["spec"]["nodeSelector"] = selector;
    auto read = read_job_variant(pod, config.devices);
    EXPECT_TRUE(read.ok()) << read.message();
    return *read;
  };
  const JobVariant first = variant("first", nlohmann::json::object());
  const JobVariant second = variant("second", {{"pool", "b"}});
  ASSERT_TRUE(planner.register_variant(first, Durability::kWritten).ok());
  ASSERT_TRUE(planner.register_variant(second, Durability::kWritten).ok());
  planner.solve_now();
  auto plan = planner.latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/first"));
  ASSERT_EQ(1u, plan->starts.count("lab/second"));
  EXPECT_EQ("n2", plan->starts.at("lab/second").node);
  const PlannedStart start = plan->starts.at("lab/first");
  ASSERT_EQ("n0", start.node);

  ASSERT_TRUE(planner.admit("lab/first", "lab/first-gpu", start).ok());
  planner.solve_now();
  plan = planner.latest_plan();
  ASSERT_EQ(1u, plan->starts.count("lab/first"));
  EXPECT_EQ("n0", plan->starts.at("lab/first").node) << "held where it was admitted";
  ASSERT_EQ(1u, plan->starts.count("lab/second"));
  EXPECT_EQ("n2", plan->starts.at("lab/second").node) << "its own selector, not first's";
  planner.stop();
}

}  // namespace
}  // namespace allox::extender
