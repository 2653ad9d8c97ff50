#include "kube/watch_event.h"

#include <gtest/gtest.h>

#include <string>

namespace allox::kube {
namespace {

using nlohmann::json;

const char* const kPod = R"({"type":"MODIFIED","object":{
  "apiVersion":"v1","kind":"Pod",
  "metadata":{"name":"a","namespace":"lab","uid":"u-1","resourceVersion":"7",
              "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{"f:containers":{}}}}],
              "annotations":{"allox.io/job":"train"}},
  "spec":{"nodeName":"n1","containers":[{"name":"main","image":"x",
          "env":[{"name":"A","value":"1"}],"resources":{"requests":{"cpu":"2"}}},
          "not an object"],
          "volumes":[{"name":"v","emptyDir":{}}]},
  "status":{"phase":"Running","containerStatuses":[{"name":"main","ready":true}]}}})";

// A set as the pod watch's: a few whole members, and a path through an array.
FieldSet pod_fields() {
  return FieldSet::only({"metadata.annotations", "metadata.namespace", "spec.nodeName",
                         "spec.containers.resources", "status.phase"});
}

TEST(WatchEventTest, KeepsEverythingByDefault) {
  auto event = parse_watch_event(kPod);
  ASSERT_TRUE(event.ok()) << event.message();
  EXPECT_EQ(WatchEvent::Type::kModified, event->type);
  EXPECT_EQ("7", event->resource_version);
  EXPECT_EQ(json::parse(kPod)["object"], event->object);
}

TEST(WatchEventTest, KeepsOnlyTheSelectedMembersAndWhatTheWatchNeeds) {
  auto event = WatchDecoder(pod_fields()).decode(kPod);
  ASSERT_TRUE(event.ok()) << event.message();
  const json want = json::parse(R"({
    "metadata":{"name":"a","namespace":"lab","resourceVersion":"7",
                "annotations":{"allox.io/job":"train"}},
    "spec":{"nodeName":"n1","containers":[{"resources":{"requests":{"cpu":"2"}}},
                                          "not an object"]},
    "status":{"phase":"Running"}})");
  EXPECT_EQ(want, event->object);
  EXPECT_EQ("7", event->resource_version);
}

TEST(WatchEventTest, MatchesMemberNamesWithoutCase) {
  auto event = WatchDecoder(FieldSet::only({"spec.nodeName"}))
                   .decode(R"({"type":"ADDED","object":{"metadata":{"name":"a",
                       "resourceVersion":"1"},"Spec":{"NODENAME":"n1","other":1}}})");
  ASSERT_TRUE(event.ok()) << event.message();
  EXPECT_EQ(json::parse(R"({"NODENAME":"n1"})"), event->object["Spec"]);
}

TEST(WatchEventTest, ReadsValuesAsNlohmannDoes) {
  // Numbers at their edges, escapes, duplicate keys (the last one wins), as the DOM parse.
  const std::string line =
      R"({"type":"ADDED","object":{"metadata":{"name":"a\u00e9\n","resourceVersion":"1"},)"
      R"("spec":{"n":[-9223372036854775808,18446744073709551615,1.5e300,0.1,-0.0,true,null],)"
      R"("d":1,"d":{"x":"y"}}}})";
  auto event = WatchDecoder(FieldSet::only({"spec"})).decode(line);
  ASSERT_TRUE(event.ok()) << event.message();
  EXPECT_EQ(json::parse(line)["object"], event->object);
  EXPECT_EQ(json::parse(line)["object"].dump(), event->object.dump());
}

TEST(WatchEventTest, ErrorEventsKeepTheirCodeWhateverTheSet) {
  auto gone = WatchDecoder(pod_fields())
                  .decode(R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"x"}})");
  ASSERT_TRUE(gone.ok()) << gone.message();
  EXPECT_EQ(WatchEvent::Type::kError, gone->type);
  EXPECT_EQ(410, gone->error_code);
  auto bookmark = WatchDecoder(pod_fields())
                      .decode(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})");
  ASSERT_TRUE(bookmark.ok()) << bookmark.message();
  EXPECT_EQ("9", bookmark->resource_version);
}

// Each bad line and the error it gives, with the pod set and with everything kept.
TEST(WatchEventTest, NamesWhatIsWrongWithALine) {
  struct Case {
    std::string line;
    std::string error;  // a prefix of the message
  };
  const Case cases[] = {
      {"", "watch event: malformed JSON"},
      {"{", "watch event: malformed JSON"},
      {R"({"type":"ADDED","object":{}} trailing)", "watch event: malformed JSON"},
      {"[1,2]", "watch event: not a JSON object"},
      {R"("ADDED")", "watch event: not a JSON object"},
      {R"({"object":{}})", "watch event: type missing"},
      {R"({"type":7,"object":{}})", "watch event: type missing"},
      {R"({"type":"ADDED"})", "watch event: object missing"},
      {R"({"type":"ADDED","object":"pod"})", "watch event: object missing"},
      {R"({"type":"ADDED","object":[]})", "watch event: object missing"},
      {R"({"type":"RENAMED","object":{}})", "watch event: unknown type \"RENAMED\""},
      {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})",
       "watch event: object.metadata.resourceVersion missing"},
      {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":7}}})",
       "watch event: object.metadata.resourceVersion missing"},
      {R"({"type":"ADDED","object":{"metadata":"a"}})",
       "watch event: object.metadata.resourceVersion missing"},
      {R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})",
       "watch event: object.metadata.name missing"},
      {R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1","name":["a"]}}})",
       "watch event: object.metadata.name missing"},
      {std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a)") + '\0' +
           R"(","resourceVersion":"1"}}})",
       "watch event: malformed JSON: a NUL byte"},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xC0\xAF\","
       "\"resourceVersion\":\"1\"}}}",
       "watch event: malformed JSON: a string that is not UTF-8"},
      // Invalid UTF-8 in a member the set drops is refused all the same: the line is not JSON.
      {"{\"type\":\"ADDED\",\"object\":{\"junk\":\"\xED\xA0\x80\"}}",
       "watch event: malformed JSON: a string that is not UTF-8"},
  };
  const WatchDecoder cut(pod_fields()), whole;
  for (const Case& c : cases) {
    for (const WatchDecoder* decoder : {&cut, &whole}) {
      auto event = decoder->decode(c.line);
      ASSERT_FALSE(event.ok()) << c.line;
      EXPECT_EQ(0u, event.message().rfind(c.error, 0)) << c.line << " -> " << event.message();
    }
  }
}

TEST(WatchEventTest, RefusesDeepNestingWhereverItIs) {
  auto nested = [](int depth, const char* where) {
    std::string line = std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a",)") +
                       R"("resourceVersion":"1"},")" + where + R"(":)";
    line += std::string(depth, '[') + std::string(depth, ']') + "}}";
    return line;
  };
  const WatchDecoder cut(pod_fields()), whole;
  for (const WatchDecoder* decoder : {&cut, &whole}) {
    // A dropped member ("junk") and a kept one ("spec"), each a million levels deep.
    for (const char* where : {"junk", "spec"}) {
      auto deep = decoder->decode(nested(1'000'000, where));
      ASSERT_FALSE(deep.ok()) << where;
      EXPECT_EQ("watch event: nested deeper than 200 levels", deep.message());
    }
    // Up to the bound (the line's own object and the object are two levels) it is read.
    auto within = decoder->decode(nested(kMaxWatchNesting - 2, "junk"));
    EXPECT_TRUE(within.ok()) << within.message();
  }
}

TEST(WatchEventTest, ReadsHugeStringsWholeAndDropsThemUnbuilt) {
  const std::string big(8 << 20, 'x');
  const std::string line = R"({"type":"ADDED","object":{"metadata":{"name":"a",)"
                           R"("resourceVersion":"1","annotations":{"k":")" +
                           big + R"("}},"status":{"message":")" + big + R"("}}})";
  auto event = WatchDecoder(pod_fields()).decode(line);
  ASSERT_TRUE(event.ok()) << event.message();
  EXPECT_EQ(big, event->object["metadata"]["annotations"]["k"]);
  EXPECT_FALSE(event->object["status"].contains("message"));
}

TEST(FieldSetTest, APathEndingAtAMemberKeepsItWhole) {
  FieldSet set = FieldSet::only({"spec.containers.resources", "spec"});
  ASSERT_NE(nullptr, set.member("spec"));
  EXPECT_TRUE(set.member("spec")->everything());
  EXPECT_EQ(nullptr, set.member("status"));
  FieldSet narrow = FieldSet::only({"spec.containers.resources"});
  const FieldSet* spec = narrow.member("SPEC");
  ASSERT_NE(nullptr, spec);
  EXPECT_FALSE(spec->everything());
  EXPECT_EQ(nullptr, spec->member("volumes"));
  EXPECT_TRUE(FieldSet().everything());
}

}  // namespace
}  // namespace allox::kube
