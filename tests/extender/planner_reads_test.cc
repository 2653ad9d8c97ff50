// extender/planner.h's read_registered: the one shared lock a /filter of a registered pod takes.
// It reads only for a variant that needs no registration, so the filter's answer and the check
// that nothing needs writing come from the same book.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "extender/planner.h"
#include "tests/extender/test_support.h"

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

}  // namespace
}  // namespace allox::extender
