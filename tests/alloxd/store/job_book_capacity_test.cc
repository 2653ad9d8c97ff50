// alloxd/store/job_book.h, the capacity index: every inventory node's machines per device, total and
// free, looked up by a name that is only a view (a /filter's offered names are views into the
// request) and kept current by start() and finish().
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "alloxd/store/job_book.h"

namespace allox::extender {
namespace {

// A view that is not a whole std::string: the lookup must use only its characters.
std::string_view prefix(const std::string& text, std::size_t n) {
  return std::string_view(text).substr(0, n);
}

JobVariant gpu_variant(const std::string& job) {
  return JobVariant{{job + "-gpu", "lab", "uid-" + job}, "lab/" + job, "lab", "gpu", {}, {}};
}

TEST(JobBookCapacityTest, NodesAreLookedUpByViewAndTellAMissingDeviceFromAMissingNode) {
  JobBook book(DeviceMapping{}, 60);
  book.set_inventory({{"g1", {{"gpu", 2}, {"cpu", 1}}}, {"bare", {}}});
  const std::string text = "g1-and-more";
  const NodeCapacity gpus = book.capacity(prefix(text, 2), "gpu");
  EXPECT_EQ(2, gpus.total);
  EXPECT_EQ(2, gpus.free);
  EXPECT_EQ(1, book.capacity(prefix(text, 2), "cpu").total);
  EXPECT_EQ(0, book.capacity(prefix(text, 3), "gpu").total) << "g1- is another name";

  // A node without machines is in the inventory; a name that is not, is not.
  EXPECT_TRUE(book.has_node("bare"));
  ASSERT_TRUE(book.find_capacity("bare", "gpu").has_value());
  EXPECT_EQ(0, book.find_capacity("bare", "gpu")->total);
  EXPECT_FALSE(book.has_node(prefix(text, 1)));
  EXPECT_FALSE(book.find_capacity("ghost", "gpu").has_value());
  EXPECT_EQ(0, book.capacity("ghost", "gpu").total);
}

TEST(JobBookCapacityTest, StartAndFinishMoveTheFreeCountAndANewInventoryReplacesIt) {
  JobBook book(DeviceMapping{}, 60);
  book.set_inventory({{"g1", {{"gpu", 2}}}});
  const JobVariant a = gpu_variant("a");
  JobRecord record;
  record.id = a.job_id;
  record.user = a.user;
  book.add_run(record, a);
  ASSERT_TRUE(book.start(a.job_id, a, "g1", -1, 1.0).ok());
  EXPECT_EQ(1, book.capacity("g1", "gpu").free);
  EXPECT_EQ(2, book.capacity("g1", "gpu").total);

  // The running job keeps its machine on the new inventory; a dropped node is gone.
  book.set_inventory({{"g1", {{"gpu", 3}}}, {"g2", {{"gpu", 1}}}});
  EXPECT_EQ(2, book.capacity("g1", "gpu").free);
  EXPECT_EQ(1, book.capacity("g2", "gpu").free);
  ASSERT_TRUE(book.finish(a.job_id, 2.0).ok());
  EXPECT_EQ(3, book.capacity("g1", "gpu").free);
  book.set_inventory({{"g2", {{"gpu", 1}}}});
  EXPECT_FALSE(book.has_node("g1"));
  EXPECT_FALSE(book.find_capacity("g1", "gpu").has_value());
}

}  // namespace
}  // namespace allox::extender
