// alloxd/http/request_threads.h: the request threads' class from the setting, the listener and
// what the kernel grants.
#include "alloxd/http/request_threads.h"

#include <gtest/gtest.h>

namespace allox::extender {
namespace {

const Status kGranted = OkStatus();
const Status kRefused = Error{"run the thread in the real-time class (it needs CAP_SYS_NICE)"};

TEST(RequestThreadsTest, ParsesTheThreeSettingsAndNamesThemBack) {
  for (const RequestThreads threads :
       {RequestThreads::kAuto, RequestThreads::kNormal, RequestThreads::kRealtime}) {
    auto parsed = parse_request_threads(request_threads_name(threads));
    ASSERT_TRUE(parsed.ok()) << request_threads_name(threads);
    EXPECT_EQ(threads, *parsed);
  }
  auto fast = parse_request_threads("fast");
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ("auto, normal or realtime", fast.message());
  EXPECT_FALSE(parse_request_threads("Auto").ok());
}

TEST(RequestThreadsTest, OnlyLocalAddressesAreLoopback) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "", "x"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(RequestThreadsTest, AutoIsRealTimeOnlyWhenGrantedAndOnLoopback) {
  const RequestClassChoice granted =
      choose_request_class(RequestThreads::kAuto, "127.0.0.1", kGranted);
  EXPECT_EQ(RequestClass::kRealtime, granted.chosen);

  const RequestClassChoice refused =
      choose_request_class(RequestThreads::kAuto, "127.0.0.1", kRefused);
  EXPECT_EQ(RequestClass::kNormal, refused.chosen);
  EXPECT_NE(std::string::npos, refused.reason.find("CAP_SYS_NICE")) << refused.reason;

  const RequestClassChoice exposed =
      choose_request_class(RequestThreads::kAuto, "0.0.0.0", kGranted);
  EXPECT_EQ(RequestClass::kNormal, exposed.chosen);
  EXPECT_NE(std::string::npos, exposed.reason.find("(0.0.0.0) is not on loopback"))
      << exposed.reason;
}

TEST(RequestThreadsTest, RealtimeIsTheOperatorsCallOnAnyListenerAndNormalIsNever) {
  EXPECT_EQ(RequestClass::kRealtime,
            choose_request_class(RequestThreads::kRealtime, "0.0.0.0", kGranted).chosen);
  const RequestClassChoice refused =
      choose_request_class(RequestThreads::kRealtime, "127.0.0.1", kRefused);
  EXPECT_EQ(RequestClass::kNormal, refused.chosen);
  EXPECT_NE(std::string::npos, refused.reason.find("request_threads: realtime: "))
      << refused.reason;
  EXPECT_EQ(RequestClass::kNormal,
            choose_request_class(RequestThreads::kNormal, "127.0.0.1", kGranted).chosen);
}

}  // namespace
}  // namespace allox::extender
