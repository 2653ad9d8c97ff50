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
// is a KubeResponse for the caller to judge. The bearer token goes on every request.
//
// HTTP/1.1 over Boost.Beast, driven on the caller's thread: there is no I/O thread. A call takes
// an idle kept-alive connection from a small pool (or opens one), writes, reads the whole answer
// and gives the connection back when the answer allows keep-alive; concurrent callers each hold
// their own, so the pool grows to the most callers at once. A stream opens a connection of its
// own and never gives it back.
//
// https: the server must present a certificate that chains to ca_file (the system's CA paths
// when it is empty) and names the URL's host (DNS name or IP address); SNI names the host.
//
// Time bounds: a call's call_timeout runs from taking a connection (connect and TLS handshake
// included) to the last byte of the answer; a stream's idle_timeout bounds connecting, its
// answer's head and then each wait for more of the body. Resolving a host name is the system
// resolver's, with its own timeouts (an IP literal is not resolved).
//
// Retry rule (once, on a fresh connection, within the same call_timeout): a kept-alive
// connection the server closed while it sat idle is dropped before use when that is visible.
// When the server closes it as a request goes out, the request is sent again only if nothing of
// it was written, or no byte of an answer arrived and it is a GET: a POST, PUT, PATCH or DELETE
// may have been carried out by a server that died before answering, so its failure is returned
// to the caller, who knows whether doing it twice is safe (the rule of Go's net/http). Nothing
// is retried once any byte of an answer has arrived, nor after a timeout.
//
// Thread-safe; calls may block for at most their timeout (or until stop(), which posts a close
// to every connection in use: the holder's wait ends at once).
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
  // The largest answer a one-shot call reads (a LIST page is the largest there is): a longer
  // one is an Error as soon as it is known (its Content-Length, or a chunked body reaching it),
  // read no further and never held whole.
  std::size_t max_answer_bytes = 32 << 20;
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
  // Any other status comes back with its body, on_line never called. on_caught_up, when set,
  // is called each time the lines read so far are all handed over and the next read may wait
  // (a reader that batches its work flushes there).
  Expected<KubeResponse> stream(const std::string& path, std::chrono::milliseconds idle_timeout,
                                const std::function<bool(std::string_view line)>& on_line,
                                const std::function<void()>& on_caught_up = nullptr);

  // Cancels calls in flight; later calls fail at once. Idempotent.
  void stop();
  bool stopped() const { return stopped_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stopped_{false};
};

// Percent-encodes one path segment or query value: all but RFC 3986's unreserved characters
// (ALPHA DIGIT - . _ ~), byte by byte.
std::string escape(std::string_view text);

}  // namespace allox::kube
