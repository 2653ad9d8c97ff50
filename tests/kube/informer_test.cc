// kube/informer.h: list, watch, bookmarks, and every way a watch ends, against a
// scripted API server that plays the real protocol.
#include "kube/informer.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "core/log.h"
#include "tests/kube/scripted_server.h"

namespace allox::kube {
namespace {

using nlohmann::json;
using testing::LineChannel;
using testing::ScriptedApi;
using testing::ScriptedReply;
using testing::ScriptedRequest;
using testing::ScriptedServer;

json pod(const std::string& name, const std::string& rv) {
  return {{"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "lab"}, {"resourceVersion", rv}}}};
}

std::string event(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

// Records what the informer hands over: the current set of names, and a log.
class Recorder final : public InformerHandler {
 public:
  void on_replace(const std::vector<json>& objects) override {
    std::lock_guard lock(mu_);
    names_.clear();
    for (const json& o : objects) names_.insert(o["metadata"]["name"].get<std::string>());
    log_.push_back("replace " + std::to_string(objects.size()));
    cv_.notify_all();
  }
  void on_upsert(const json& object) override {
    std::lock_guard lock(mu_);
    names_.insert(object["metadata"]["name"].get<std::string>());
    log_.push_back("upsert " + object["metadata"]["name"].get<std::string>());
    cv_.notify_all();
  }
  void on_delete(const json& object) override {
    std::lock_guard lock(mu_);
    names_.erase(object["metadata"]["name"].get<std::string>());
    log_.push_back("delete " + object["metadata"]["name"].get<std::string>());
    cv_.notify_all();
  }
  // Waits until the log has `n` entries.
  std::vector<std::string> wait_log(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return log_.size() >= n; });
    return log_;
  }
  std::set<std::string> names() {
    std::lock_guard lock(mu_);
    return names_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> names_;
  std::vector<std::string> log_;
};

// An API server whose pod list is `items` at resourceVersion `list_rv` (then `next_items`, from
// the second list on, when set), and whose watches are served from the channels in `watches`, in
// order.
struct Script {
  std::mutex mu;
  std::vector<json> items;
  std::optional<std::vector<json>> next_items;
  std::string list_rv = "10";
  std::deque<ScriptedReply> watches;
  int list_status = 200;

  ScriptedReply handle(const ScriptedRequest& r) {
    std::lock_guard lock(mu);
    if (r.target.find("watch=1") == std::string::npos) {
      if (list_status != 200) return {list_status, "{}", nullptr};
      ScriptedReply reply{
          200,
          json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", list_rv}}}, {"items", items}}
              .dump(),
          nullptr};
      if (next_items) items = *std::exchange(next_items, std::nullopt);
      return reply;
    }
    if (watches.empty()) {  // nothing scripted: hold the watch open until the test ends
      return {200, "", std::make_shared<LineChannel>()};
    }
    ScriptedReply reply = watches.front();
    watches.pop_front();
    return reply;
  }
};

InformerOptions fast_options() {
  InformerOptions options;
  options.path = "/api/v1/pods";
  options.selector = "fieldSelector=spec.schedulerName%3Dallox";
  options.backoff_initial = std::chrono::milliseconds(10);
  options.backoff_max = std::chrono::milliseconds(50);
  options.min_relist_interval = std::chrono::milliseconds(10);
  return options;
}

bool is_watch(const ScriptedRequest& r) {
  return r.target.find("watch=1") != std::string::npos;
}

std::vector<std::string> watch_targets(const ScriptedServer& server) {
  std::vector<std::string> targets;
  for (const auto& r : server.requests()) {
    if (is_watch(r)) targets.push_back(r.target);
  }
  return targets;
}

// Waits until the server has seen `n` watch requests (watch = true) or `n` lists. The informer
// sends each only once what came before is done and counted: a watch follows a list whose
// on_replace has returned (synced(), lists()), a retried list follows a counted failure.
bool wait_requests(const ScriptedServer& server, bool watch, std::size_t n) {
  return server.wait_for([&](const std::vector<ScriptedRequest>& requests) {
    return static_cast<std::size_t>(std::count_if(requests.begin(), requests.end(), [&](auto& r) {
             return is_watch(r) == watch;
           })) >= n;
  });
}

TEST(InformerTest, ListsThenWatchesFromTheListVersionWithBookmarksAndSelector) {
  Script script;
  script.items = {pod("a", "5"), pod("b", "7")};
  auto watch = std::make_shared<LineChannel>();
  script.watches.push_back({200, "", watch});
  ScriptedApi api([&](const ScriptedRequest& r) { return script.handle(r); });
  Recorder recorder;
  Informer informer(api.client, fast_options(), recorder);
  informer.start();
  recorder.wait_log(1);
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 1));
  EXPECT_TRUE(informer.synced());
  watch->push(event("ADDED", pod("c", "11")));
  watch->push(event("MODIFIED", pod("a", "12")));
  watch->push(event("DELETED", pod("b", "13")));
  auto log = recorder.wait_log(4);
  EXPECT_EQ((std::vector<std::string>{"replace 2", "upsert c", "upsert a", "delete b"}), log);
  EXPECT_EQ((std::set<std::string>{"a", "c"}), recorder.names());
  auto targets = watch_targets(api.server);
  ASSERT_EQ(1u, targets.size());
  EXPECT_NE(std::string::npos, targets[0].find("resourceVersion=10")) << targets[0];
  EXPECT_NE(std::string::npos, targets[0].find("allowWatchBookmarks=true"));
  EXPECT_NE(std::string::npos, targets[0].find("fieldSelector=spec.schedulerName%3Dallox"));
  api.client.stop();
  informer.stop();
}

// alloxd puts the watch's thread in its background class through this hook: it must run on the
// informer's own thread (named by then), once, before the first list.
TEST(InformerTest, TheThreadStartHookRunsOnTheInformersThreadBeforeItsFirstList) {
  Script script;
  ScriptedApi api([&](const ScriptedRequest& r) { return script.handle(r); });
  std::mutex mu;
  std::vector<std::thread::id> ran_on;
  std::string name;
  std::size_t requests_before = 99;
  InformerOptions options = fast_options();
  options.on_thread_start = [&] {
    char buffer[16] = {};
    pthread_getname_np(pthread_self(), buffer, sizeof(buffer));
    std::lock_guard lock(mu);
    ran_on.push_back(std::this_thread::get_id());
    name = buffer;
    requests_before = api.server.requests().size();
  };
  Recorder recorder;
  Informer informer(api.client, options, recorder);
  informer.start();
  recorder.wait_log(1);
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 1));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(1u, ran_on.size());
    EXPECT_NE(std::this_thread::get_id(), ran_on[0]);
    EXPECT_EQ("allox-informer", name);
    EXPECT_EQ(0u, requests_before);
  }
  api.client.stop();
  informer.stop();
}

TEST(InformerTest, CleanEndRewatchesFromTheLastVersionSeenIncludingBookmarks) {
  Script script;
  auto first = std::make_shared<LineChannel>();
  script.watches.push_back({200, "", first});
  ScriptedApi api([&](const ScriptedRequest& r) { return script.handle(r); });
  Recorder recorder;
  Informer informer(api.client, fast_options(), recorder);
  informer.start();
  first->push(event("ADDED", pod("a", "20")));
  first->push(event("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "25"}}}}));
  first->close();
  recorder.wait_log(2);
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 2));
  auto targets = watch_targets(api.server);
  ASSERT_EQ(2u, targets.size());
  EXPECT_NE(std::string::npos, targets[1].find("resourceVersion=25")) << targets[1];
  EXPECT_EQ(1u, informer.lists());  // a clean end is not a reason to re-list
  api.client.stop();
  informer.stop();
}

// Each way a watch can go wrong ends in a fresh list whose set replaces the old one.
struct BadWatch {
  const char* name;
  std::function<ScriptedReply()> reply;
};

TEST(InformerTest, GoneGarbageAndBrokenStreamsAreReListedNotTrusted) {
  std::vector<BadWatch> cases = {
      {"410 as an ERROR event",
       [] {
         auto c = std::make_shared<LineChannel>();
         c->push(event("ERROR", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}));
         return ScriptedReply{200, "", c};
       }},
      {"410 as the HTTP answer",
       [] {
         return ScriptedReply{410, "{}", nullptr};
       }},
      {"500 answer",
       [] {
         return ScriptedReply{500, "{}", nullptr};
       }},
      {"a line that is not JSON",
       [] {
         auto c = std::make_shared<LineChannel>();
         c->push("{\"type\":\"ADDED\",\"object\":{trunc");
         return ScriptedReply{200, "", c};
       }},
      {"an unknown event type",
       [] {
         auto c = std::make_shared<LineChannel>();
         c->push(event("SURPRISE", pod("x", "30")));
         return ScriptedReply{200, "", c};
       }},
      {"an object without metadata",
       [] {
         auto c = std::make_shared<LineChannel>();
         c->push(R"({"type":"ADDED","object":{"kind":"Pod"}})");
         return ScriptedReply{200, "", c};
       }},
      {"a broken connection",
       [] {
         auto c = std::make_shared<LineChannel>();
         c->break_connection();
         return ScriptedReply{200, "", c};
       }},
  };
  for (const BadWatch& bad : cases) {
    Script script;
    script.items = {pod("old", "1")};
    // What the API server holds by the re-list, however soon it comes (a 410 answer re-lists
    // at once).
    script.next_items = std::vector<json>{pod("new", "40")};
    script.watches.push_back(bad.reply());
    ScriptedApi api([&](const ScriptedRequest& r) { return script.handle(r); });
    Recorder recorder;
    Informer informer(api.client, fast_options(), recorder);
    informer.start();
    auto log = recorder.wait_log(2);
    ASSERT_GE(log.size(), 2u) << bad.name;
    EXPECT_EQ("replace 1", log[1]) << bad.name;
    EXPECT_EQ(std::set<std::string>{"new"}, recorder.names()) << bad.name;
    // The re-list is counted before the watch that follows it is opened.
    ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 2)) << bad.name;
    EXPECT_EQ(2u, informer.lists()) << bad.name;
    api.client.stop();
    informer.stop();
  }
}

TEST(InformerTest, FailingListsBackOffAndRetryUntilTheyWork) {
  std::ostringstream log;  // read only once the informer's thread has ended
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kText}, log);
  Script script;
  script.list_status = 503;
  ScriptedApi api([&](const ScriptedRequest& r) { return script.handle(r); });
  Recorder recorder;
  Informer informer(api.client, fast_options(), recorder);
  informer.start();
  // Three failures are counted by the time the fourth list is sent.
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/false, 4));
  EXPECT_GE(informer.failures(), 3u);
  EXPECT_FALSE(informer.synced());
  {
    std::lock_guard lock(script.mu);
    script.list_status = 200;
  }
  recorder.wait_log(1);
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 1));
  EXPECT_TRUE(informer.synced());
  api.client.stop();
  informer.stop();
  configure_log(LogOptions{});
  // Each failed list is one warning naming the collection and the answer; nobody else sees it.
  EXPECT_NE(std::string::npos,
            log.str().find("list failed; retrying path=\"/api/v1/pods\" retry_in_ms="))
      << log.str();
  EXPECT_NE(std::string::npos, log.str().find("error=\"HTTP 503\"")) << log.str();
}

// When each request went out, by kind (the scripted server's handler runs as it arrives).
struct Arrivals {
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> lists, watches;
  void note(const ScriptedRequest& r) {
    std::lock_guard lock(mu);
    (is_watch(r) ? watches : lists).push_back(std::chrono::steady_clock::now());
  }
  // The gap before the last of `times`.
  static std::chrono::milliseconds last_gap(const std::vector<std::chrono::steady_clock::time_point>& times) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(times.back() - times[times.size() - 2]);
  }
};

// An API server that lists fine and answers every watch with 410: each LIST succeeds, and
// must not reset the back-off that the watches after it earn, so the LISTs slow down to one per
// backoff_max instead of a loop.
TEST(InformerTest, ASuccessfulListDoesNotResetTheBackOffWhileWatchesFail) {
  for (const bool as_event : {false, true}) {
    Script script;
    Arrivals arrivals;
    ScriptedApi api([&](const ScriptedRequest& r) {
      arrivals.note(r);
      if (!is_watch(r)) return script.handle(r);
      if (!as_event) return ScriptedReply{410, "{}", nullptr};
      auto c = std::make_shared<LineChannel>();
      c->push(event("ERROR", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}));
      return ScriptedReply{200, "", c};
    });
    InformerOptions options = fast_options();
    options.backoff_initial = std::chrono::milliseconds(20);
    options.backoff_max = std::chrono::milliseconds(200);
    Recorder recorder;
    Informer informer(api.client, options, recorder);
    informer.start();
    ASSERT_TRUE(wait_requests(api.server, /*watch=*/false, 8));
    api.client.stop();
    informer.stop();
    std::lock_guard lock(arrivals.mu);
    // 20, 40, 80, 160, then 200 ms at most, each jittered down by at most a fifth: the eighth
    // LIST comes at least 160 ms after the seventh (it came at once when a LIST reset it).
    EXPECT_GE(Arrivals::last_gap(arrivals.lists).count(), 150) << (as_event ? "event" : "answer");
  }
}

// A server that ends every watch at once, cleanly: the watch is opened again after a growing
// pause, never re-listed, and never in a loop.
TEST(InformerTest, WatchesThatEndAtOnceAreReopenedAfterAGrowingPause) {
  Script script;
  Arrivals arrivals;
  ScriptedApi api([&](const ScriptedRequest& r) {
    arrivals.note(r);
    if (!is_watch(r)) return script.handle(r);
    auto c = std::make_shared<LineChannel>();
    c->close();
    return ScriptedReply{200, "", c};
  });
  InformerOptions options = fast_options();
  options.backoff_initial = std::chrono::milliseconds(20);
  options.backoff_max = std::chrono::milliseconds(200);
  std::vector<std::string> watch_ends;
  options.on_watch_end = [&](const char* why) { watch_ends.emplace_back(why); };
  Recorder recorder;
  Informer informer(api.client, options, recorder);
  informer.start();
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/true, 8));
  api.client.stop();
  informer.stop();
  EXPECT_EQ(1u, informer.lists());
  std::lock_guard lock(arrivals.mu);
  EXPECT_GE(Arrivals::last_gap(arrivals.watches).count(), 150);
  ASSERT_GE(watch_ends.size(), 7u);
  EXPECT_EQ("ended", watch_ends[0]);
}

// LISTs keep min_relist_interval between them whatever asks for them (here a 410 that comes
// after a watch that was healthy, which resets the back-off).
TEST(InformerTest, ListsKeepTheirMinimumInterval) {
  Script script;
  Arrivals arrivals;
  ScriptedApi api([&](const ScriptedRequest& r) {
    arrivals.note(r);
    if (!is_watch(r)) return script.handle(r);
    return ScriptedReply{410, "{}", nullptr};
  });
  InformerOptions options = fast_options();
  options.healthy_watch = std::chrono::milliseconds(0);  // every watch counts as healthy
  options.min_relist_interval = std::chrono::milliseconds(150);
  int lists = 0;
  options.on_list = [&] { ++lists; };
  Recorder recorder;
  Informer informer(api.client, options, recorder);
  informer.start();
  ASSERT_TRUE(wait_requests(api.server, /*watch=*/false, 4));
  api.client.stop();
  informer.stop();
  EXPECT_GE(lists, 3);
  std::lock_guard lock(arrivals.mu);
  // The informer keeps 150 ms on its own clock; the server sees each LIST a moment after it
  // is sent, so two arrivals may be a hair closer than that.
  for (std::size_t i = 1; i < arrivals.lists.size(); ++i) {
    EXPECT_GE(arrivals.lists[i] - arrivals.lists[i - 1], std::chrono::milliseconds(140)) << i;
  }
}

// A LIST answer over the client's max_answer_bytes is refused as soon as it is known, logged
// with the reason, and retried after a back-off like any failed list.
TEST(InformerTest, AListAnswerOverTheLimitIsRefusedAndRetried) {
  std::ostringstream log;  // read only once the informer's thread has ended
  configure_log({"alloxd", LogLevel::kInfo, LogFormat::kText}, log);
  ScriptedServer server([](const ScriptedRequest& r) {
    if (is_watch(r)) return ScriptedReply{200, "", std::make_shared<LineChannel>()};
    // Announces 2 GB and sends a little: the client must not wait for (or hold) the rest.
    return ScriptedReply{200, "", nullptr,
                         std::string("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     "Content-Length: 2147483648\r\n\r\n{\"items\":[")};
  });
  KubeClientOptions client_options{server.url(), "", ""};
  client_options.max_answer_bytes = 1 << 20;
  KubeClient client(client_options);
  Recorder recorder;
  Informer informer(client, fast_options(), recorder);
  informer.start();
  ASSERT_TRUE(wait_requests(server, /*watch=*/false, 3));
  client.stop();
  informer.stop();
  configure_log(LogOptions{});
  EXPECT_FALSE(informer.synced());
  EXPECT_GE(informer.failures(), 2u);
  EXPECT_NE(std::string::npos, log.str().find("the answer is larger than 1048576 bytes"))
      << log.str();
}

TEST(InformerTest, ParseWatchEventNamesWhatIsWrong) {
  EXPECT_EQ("watch event: type missing", parse_watch_event(R"({"object":{}})").message());
  EXPECT_EQ("watch event: object missing", parse_watch_event(R"({"type":"ADDED"})").message());
  EXPECT_EQ("watch event: object.metadata.resourceVersion missing",
            parse_watch_event(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})").message());
  auto gone = parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(410, gone->error_code);
}

}  // namespace
}  // namespace allox::kube
