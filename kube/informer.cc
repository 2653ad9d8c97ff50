#include "kube/informer.h"

#include <pthread.h>

#include "core/log.h"

namespace allox::kube {
namespace {

using nlohmann::json;

// The list's resourceVersion (watch_event.cc reads an event's).
std::string resource_version_of(const json& object) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto rv = metadata->find("resourceVersion");
  return rv != metadata->end() && rv->is_string() ? rv->get<std::string>() : "";
}

std::string with_query(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

}  // namespace

Informer::Informer(KubeClient& client, InformerOptions options, InformerHandler& handler)
    : client_(client),
      options_(std::move(options)),
      handler_(handler),
      pacing_({.backoff_initial = options_.backoff_initial,
               .backoff_max = options_.backoff_max,
               .min_relist_interval = options_.min_relist_interval,
               .healthy_watch = options_.healthy_watch,
               .watch_timeout = options_.watch_timeout}),
      decoder_(options_.fields) {}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Informer::relist() {
  relist_.store(true);
}

bool Informer::sleep_for(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, delay, [&] { return stopping_; });
}

bool Informer::stopping() {
  if (client_.stopped()) return true;  // shutting down: the client goes first (see informer.h)
  std::lock_guard lock(mu_);
  return stopping_;
}

void Informer::loop() {
  // As `top -H` shows it (core/thread_priority.h names alloxd's other threads).
  pthread_setname_np(pthread_self(), "allox-informer");
  if (options_.on_thread_start) options_.on_thread_start();
  using Clock = WatchPacing::Clock;
  using End = WatchPacing::WatchEnd;
  std::string resource_version;
  bool need_list = true;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (relist_.exchange(false)) need_list = true;
    if (need_list) {
      if (const auto wait = pacing_.before_list(Clock::now()); wait.count() > 0) {
        if (!sleep_for(wait)) return;
        continue;
      }
      if (auto listed = list(resource_version); !listed) {
        ++failures_;
        const auto delay = pacing_.list_failed(Clock::now());
        if (stopping()) return;  // the call failed because we are shutting down: not news
        log_warn("list failed; retrying", {{"path", options_.path},
                                           {"retry_in_ms", static_cast<long long>(delay.count())},
                                           {"error", listed.message()}});
        if (options_.on_list_failed) options_.on_list_failed(listed);
        if (!sleep_for(delay)) return;
        continue;
      }
      if (options_.on_list) options_.on_list();
      need_list = false;
    }
    std::string why;
    const auto opened = Clock::now();
    const WatchEnd end = watch(resource_version, why);
    if (end == WatchEnd::kRelist) {
      need_list = true;
      continue;
    }
    if (stopping()) return;
    const End paced = end == WatchEnd::kTimeout ? End::kClean
                      : end == WatchEnd::kGone  ? End::kGone
                                                : End::kFailed;
    const auto delay = pacing_.watch_ended(paced, opened, Clock::now());
    if (options_.on_watch_end) {
      options_.on_watch_end(paced == End::kClean ? "ended" : paced == End::kGone ? "gone" : "failed");
    }
    switch (end) {
      case WatchEnd::kTimeout:
        if (delay.count() > 0) {
          log_info("watch ended early; watching again after a pause",
                   {{"path", options_.path},
                    {"retry_in_ms", static_cast<long long>(delay.count())}});
        }
        break;
      case WatchEnd::kGone:
        log_info("watch expired (410 Gone); relisting",
                 {{"path", options_.path},
                  {"resource_version", resource_version},
                  {"retry_in_ms", static_cast<long long>(delay.count())}});
        need_list = true;
        break;
      case WatchEnd::kFailed:
        ++failures_;
        need_list = true;
        log_warn("watch failed; relisting", {{"path", options_.path},
                                             {"retry_in_ms", static_cast<long long>(delay.count())},
                                             {"error", why}});
        break;
      case WatchEnd::kRelist:
        break;
    }
    if (delay.count() > 0 && !sleep_for(delay)) return;
  }
}

Status Informer::list(std::string& resource_version) {
  std::vector<json> objects;
  std::string continue_token;
  std::string version;
  do {
    std::string query = "limit=" + std::to_string(options_.page_size);
    if (!options_.selector.empty()) query += "&" + options_.selector;
    if (!continue_token.empty()) query += "&continue=" + escape(continue_token);
    auto reply = client_.call("GET", with_query(options_.path, query));
    if (!reply) return reply.error();
    if (reply->status != 200) return Error{"HTTP " + std::to_string(reply->status)};
    json list = json::parse(reply->body, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      return Error{"the reply is not a list (no items array)"};
    }
    std::string page_version = resource_version_of(list);
    if (page_version.empty()) return Error{"the list has no metadata.resourceVersion"};
    if (version.empty()) version = page_version;
    for (json& item : list["items"]) {
      if (!item.is_object() || !item.contains("metadata")) {
        return Error{"an item has no metadata"};
      }
      objects.push_back(std::move(item));
    }
    continue_token.clear();
    if (const json& metadata = list["metadata"];
        metadata.contains("continue") && metadata["continue"].is_string()) {
      continue_token = metadata["continue"].get<std::string>();
    }
  } while (!continue_token.empty());
  handler_.on_replace(objects);
  resource_version = version;
  ++lists_;
  return OkStatus();
}

Informer::WatchEnd Informer::watch(std::string& resource_version, std::string& why) {
  std::string query =
      "watch=1&allowWatchBookmarks=true&resourceVersion=" + escape(resource_version) +
      "&timeoutSeconds=" + std::to_string(options_.watch_timeout.count());
  if (!options_.selector.empty()) query += "&" + options_.selector;
  auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(options_.watch_timeout) +
              std::chrono::seconds(30);
  ++watches_;
  WatchEnd end = WatchEnd::kTimeout;
  auto reply = client_.stream(
      with_query(options_.path, query), idle,
      [&](std::string_view line) {
        auto event = decoder_.decode(line);
        if (!event) {
          end = WatchEnd::kFailed;  // garbage: the stream cannot be trusted any more
          why = event.message();
          return false;
        }
        switch (event->type) {
          case WatchEvent::Type::kError:
            end = event->error_code == 410 ? WatchEnd::kGone : WatchEnd::kFailed;
            why = "ERROR event, code " + std::to_string(event->error_code);
            return false;
          case WatchEvent::Type::kAdded:
          case WatchEvent::Type::kModified:
            handler_.on_upsert(event->object);
            break;
          case WatchEvent::Type::kDeleted:
            handler_.on_delete(event->object);
            break;
          case WatchEvent::Type::kBookmark:
            break;
        }
        resource_version = event->resource_version;
        if (relist_.load()) {
          end = WatchEnd::kRelist;
          return false;
        }
        return true;
      },
      [&] { handler_.on_caught_up(); });
  handler_.on_caught_up();
  if (!reply) {
    why = reply.message();
    return WatchEnd::kFailed;
  }
  if (reply->status == 410) return WatchEnd::kGone;
  if (reply->status != 200) {
    why = "HTTP " + std::to_string(reply->status);
    return WatchEnd::kFailed;
  }
  return end;
}

}  // namespace allox::kube
