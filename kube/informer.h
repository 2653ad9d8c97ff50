// A list + watch feed of one kind of object, the way client-go's reflector works:
//
//   1. LIST <path>?<selector> (in pages of `page_size`) and hand the complete set to
//      on_replace; remember the list's resourceVersion.
//   2. WATCH from it with allowWatchBookmarks=true and timeoutSeconds: ADDED and MODIFIED go to
//      on_upsert, DELETED to on_delete, BOOKMARK only moves the resourceVersion.
//   3. A watch the server ends cleanly (its timeout) is opened again from the last
//      resourceVersion.
//   4. 410 Gone (an HTTP answer or an ERROR event: the resourceVersion is too old) re-lists.
//      Anything else that goes wrong (a transport error, a 5xx, a broken stream, a line that
//      is not a watch event, an object without metadata, a LIST answer over the client's
//      max_answer_bytes) is not trusted: back off and re-list.
//   When each of those happens is watch_pacing.h's: back-off with jitter that only a watch
//   that stayed open resets, LISTs at least min_relist_interval apart, an early clean end
//   backed off like a failure. A server that answers every watch with 410, or ends each at
//   once, gets a LIST every backoff_max, not a loop.
//   Failures are logged (core/log.h) as warnings naming the path: nobody else sees them.
//
// The handler's calls come from the informer's one thread, in order; on_caught_up follows each
// run of events read at once, and the end of every watch. After a re-list,
// on_replace carries the whole truth: objects the handler knew that are missing were deleted.
// The informer keeps no copy of the objects (the handler keeps what it needs).
//
// Thread-safe: start/stop/relist/synced from any thread. stop() returns once the thread has
// ended; it ends a watch in flight only through KubeClient::stop() or the watch's idle bound,
// so stop the client first when shutting down.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kube/watch_event.h"
#include "kube/watch_pacing.h"

namespace allox::kube {

class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  virtual void on_replace(const std::vector<nlohmann::json>& objects) = 0;
  virtual void on_upsert(const nlohmann::json& object) = 0;
  virtual void on_delete(const nlohmann::json& object) = 0;
  // The events read so far have all been handed over and the watch may now wait for more (or it
  // ended): a handler that batches its work completes it here. Called on the same thread.
  virtual void on_caught_up() {}
};

struct InformerOptions {
  std::string path;      // the collection, e.g. /api/v1/pods or /api/v1/nodes
  std::string selector;  // query parameters without '?', e.g. fieldSelector=spec.schedulerName%3Dx
  std::chrono::seconds watch_timeout{300};  // the server ends each watch after this
  int page_size = 500;
  // What of each watched object the handler reads (watch_event.h): the rest of a watch event is
  // skipped, never built. Lists hand on whole objects. Default: everything.
  FieldSet fields;
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds min_relist_interval{1000};
  // A watch open at least this long (or half of watch_timeout, if less) was healthy: it resets
  // the back-off, and its clean end is re-watched at once.
  std::chrono::milliseconds healthy_watch{10000};
  // Called on the informer's thread after each list handed to on_replace, and after each watch
  // ends with why ("ended", "gone", "failed"; not when it ends for a relist()): for metrics.
  std::function<void()> on_list;
  std::function<void(const char* why)> on_watch_end;
  // Called on the informer's thread after each list that failed (it is retried with back-off):
  // a caller whose other work waits for this list can go on without it.
  std::function<void(const Status& why)> on_list_failed;
  // Runs first on the informer's thread, after it is named (alloxd puts it in its background
  // class, core/thread_priority.h).
  std::function<void()> on_thread_start;
};

class Informer {
 public:
  // client and handler must outlive the informer.
  Informer(KubeClient& client, InformerOptions options, InformerHandler& handler);
  ~Informer();

  void start();
  void stop();  // idempotent
  // True once a list has been handed to on_replace.
  bool synced() const { return lists_.load() > 0; }
  // Asks for a fresh list (e.g. when this replica takes over); served after the current watch
  // ends or its next event.
  void relist();

  // Counters for tests and metrics.
  std::uint64_t lists() const { return lists_.load(); }
  std::uint64_t watches() const { return watches_.load(); }
  std::uint64_t failures() const { return failures_.load(); }

 private:
  void loop();
  // Lists every page; ok when on_replace was called, else what went wrong (for the log).
  Status list(std::string& resource_version);
  enum class WatchEnd { kTimeout, kGone, kFailed, kRelist };
  // `why` says what went wrong when the watch ends kFailed.
  WatchEnd watch(std::string& resource_version, std::string& why);
  bool sleep_for(std::chrono::milliseconds delay);  // false when stopping
  bool stopping();                                  // stop() was called, or the client was stopped

  KubeClient& client_;
  InformerOptions options_;
  InformerHandler& handler_;
  WatchPacing pacing_;
  WatchDecoder decoder_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> relist_{false};
  std::atomic<std::uint64_t> lists_{0}, watches_{0}, failures_{0};
  std::thread thread_;
};

}  // namespace allox::kube
