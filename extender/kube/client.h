// A Kubernetes API server connection: one-shot calls (GET, POST, PUT, PATCH, DELETE) and
// streaming GETs (watches), every one time-boxed and cancellable.
//
//   KubeClient api({"https://kubernetes.default.svc", token, ca_file});
//   auto pod = api.call("GET", "/api/v1/namespaces/lab/pods/bert");
//   api.stream("/api/v1/pods?watch=1&resourceVersion=42", idle, [](std::string_view line) {
//     ...; return true;  // false ends the stream
//   });
//   api.stop();  // from any thread: calls in flight end with an error, later calls fail at once
//
// Nothing here interprets Kubernetes objects: the caller owns paths and bodies. Transport
// failures (refused, reset, timeout, TLS) are Errors; every HTTP answer, 4xx and 5xx included,
// is a KubeResponse for the caller to judge. https URLs verify the server with ca_file when it
// is given; the bearer token goes on every request.
//
// Thread-safe; calls may block for at most their timeout (or until stop()).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace allox::kube {

struct KubeClientOptions {
  std::string url;  // e.g. https://kubernetes.default.svc or http://127.0.0.1:8001
  std::string token;
  std::string ca_file;
  // The most a one-shot call may take, from connect to the last byte of the answer.
  std::chrono::milliseconds call_timeout{2000};
  // A stream line longer than this is garbage: the stream is ended with an error.
  std::size_t max_line_bytes = 16 << 20;
};

struct KubeResponse {
  int status = 0;
  std::string body;
};

class KubeClient {
 public:
  explicit KubeClient(KubeClientOptions options);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // method: GET, POST, PUT, PATCH or DELETE; path starts with '/' and may carry a query.
  Expected<KubeResponse> call(std::string_view method, const std::string& path,
                              const std::string& body = "",
                              const std::string& content_type = "application/json");

  // A streaming GET. For a 200 answer, hands each body line (without '\n'; empty lines
  // skipped) to on_line until the server ends the stream (returns {200, ""}), on_line returns
  // false (the same), nothing arrives for idle_timeout, the stream breaks, or stop() (Errors).
  // Any other status comes back with its body, on_line never called.
  Expected<KubeResponse> stream(const std::string& path, std::chrono::milliseconds idle_timeout,
                                const std::function<bool(std::string_view line)>& on_line);

  // Cancels calls in flight; later calls fail at once. Idempotent.
  void stop();
  bool stopped() const { return stopped_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stopped_{false};
};

// Percent-encodes one path segment or query value.
std::string escape(std::string_view text);

}  // namespace allox::kube
