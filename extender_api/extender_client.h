// A small synchronous HTTP client for alloxd's endpoints, used by the kube-scheduler emulator,
// the CLI and `allox bench cluster`: JSON in, JSON out, or plain text for the endpoints that
// are not JSON (/metrics, /readyz), or a body written and read as text by the caller (the
// emulator's /filter). Any answer other than 200, a body that is not JSON (where JSON is asked
// for), or a transport fault (refused, timed out) is an Error naming the method and path.
// One kept-alive HTTP/1.1 connection (Boost.Beast), opened on the first call and again when the
// server closed it; no thread of its own, so a call costs its round trip and nothing else.
// Plain http:// only (alloxd's loopback listener).
// Not thread-safe: one client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"

namespace allox::extender {

class ExtenderClient {
 public:
  // server: "http://host:port"; admin_token is sent as a bearer token on admin calls.
  ExtenderClient(const std::string& server, std::string admin_token,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~ExtenderClient();
  ExtenderClient(const ExtenderClient&) = delete;
  ExtenderClient& operator=(const ExtenderClient&) = delete;

  Expected<nlohmann::json> get(const std::string& path);
  // GET path, the body as text: Prometheus /metrics, /readyz.
  Expected<std::string> get_text(const std::string& path);
  Expected<nlohmann::json> post(const std::string& path, const nlohmann::json& body,
                                bool admin = false);
  // POST path with a JSON body already written, the answer's body as text: for callers that
  // render and read their messages themselves (the emulated kube-scheduler's /filter, whose
  // 5,000-node bodies are not worth a DOM either way).
  Expected<std::string> post_text(const std::string& path, std::string body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a job id for use as one path segment ("team/job" -> "team%2Fjob").
std::string path_segment(const std::string& id);

}  // namespace allox::extender
