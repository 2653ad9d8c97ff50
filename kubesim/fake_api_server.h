// A fake Kubernetes API server over HTTP, faithful to kube-apiserver v1.28's REST shapes, for
// tests, `allox replay` and `allox bench cluster` (never linked into alloxd). It serves an
// ApiObjects store (api_objects.h says what behaviour it keeps) at the real paths:
//
//   GET    /api/v1/pods, /api/v1/namespaces/{ns}/pods      list; ?watch=1 streams
//   GET    /api/v1/nodes                                   list; ?watch=1 streams
//          query: resourceVersion, fieldSelector, labelSelector, limit, continue,
//                 allowWatchBookmarks, timeoutSeconds
//   POST   /api/v1/namespaces/{ns}/pods                    create (admission webhook, if set)
//   GET|PUT|PATCH|DELETE /api/v1/namespaces/{ns}/pods/{name}[/status]
//   POST   /api/v1/namespaces/{ns}/pods/{name}/binding     201 Status; 409 bound/gated/deleting
//   POST|GET|PATCH /api/v1/namespaces/{ns}/events[/{name}], and events.k8s.io/v1
//   GET|POST|PUT|PATCH|DELETE /apis/coordination.k8s.io/v1/namespaces/{ns}/leases[/{name}]
//   GET|PUT|PATCH /api/v1/nodes/{name}[/status]
//   GET    /healthz, /readyz, /version
// PATCH takes application/merge-patch+json, json-patch+json and strategic-merge-patch+json.
// A watch answers 200 with a chunked body of newline-delimited {"type":...,"object":...}.
// Errors are metav1.Status bodies with kube-apiserver's code and reason.
//
// Every request must carry `Authorization: Bearer <token>` when a token is set (401 Status
// otherwise). Fault injection for clients' error paths: fail_requests() answers matching
// requests with a status (or slows them: a rule's delay), stall() delays every answer,
// break_watches() drops open watch connections mid-stream, send_watch_garbage() writes a line that
// is not JSON.
//
// Mutating admission: with a webhook set, every pod create is sent as an AdmissionReview v1 to
// the webhook URL (https verified against ca_file, or plain http for tests); an answer's
// JSONPatch is applied; a denial rejects the create with the webhook's status; a failed call
// rejects (failurePolicy Fail, 500 InternalError) or is ignored (Ignore), as kube-apiserver does.
//
// One thread per connection (so a long watch never blocks other requests). Thread-safe.
//
//   FakeApiServer api({.token = "t"});
//   api.add_node("node-a", {{"cpu", "64"}, {"nvidia.com/gpu", "8"}});
//   // point the client at api.url(); inspect api.objects() afterwards
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "core/result.h"
#include "kubesim/api_objects.h"

namespace allox::emulator {

struct AdmissionWebhook {
  std::string name = "allox-queue-gate.allox.io";
  std::string url;                        // https://host:port/path or http:// for tests
  std::string ca_file;                    // verifies an https webhook; empty: the system's CAs
  bool fail_closed = true;                // failurePolicy: Fail (true) or Ignore
  std::set<std::string> namespaces;       // empty: every namespace (a namespaceSelector stand-in)
  std::set<std::string> scheduler_names;  // empty: every pod (an objectSelector stand-in)
  std::chrono::milliseconds timeout{10000};  // timeoutSeconds
};

struct FakeApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;             // 0: a free port
  std::string token;        // required bearer token; empty: no authentication
  ApiObjects::Clock clock;  // timestamps; default: the system clock
  std::optional<AdmissionWebhook> webhook;
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  // Starts the server; fails when the port cannot be bound.
  static Expected<std::unique_ptr<FakeApiServer>> start(FakeApiServerOptions options);
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  std::string url() const;
  ApiObjects& objects();

  // Conveniences over objects(): a Ready node with the given allocatable (and capacity).
  void add_node(const std::string& name, const std::map<std::string, std::string>& allocatable,
                const std::map<std::string, std::string>& labels = {});

  struct FaultRule {
    std::string method;                  // "" matches any
    std::string path_contains;           // "" matches any
    int status = 500;                    // 0: answered normally (after `delay`)
    int count = 1;                       // how many requests it answers; -1: until cleared
    std::chrono::milliseconds delay{0};  // waited before answering: a slow API server
  };
  void fail_requests(const FaultRule& rule);
  void clear_faults();
  void stall(std::chrono::milliseconds delay);  // 0: answer at once again
  void break_watches() { objects().break_watches(); }
  void send_watch_garbage(const std::string& line = "{not json") {
    objects().inject_watch_line(line);
  }

  int unauthorized_requests() const;
  std::uint64_t requests() const;
  // Requests to a resource by "METHOD plural[/subresource]" ("PATCH pods", "POST pods/binding";
  // a watch counts as "WATCH pods"): what a client asked of the store, for benchmarks.
  std::map<std::string, std::uint64_t> requests_by_kind() const;
  int open_watches() const;
  // Registers (or replaces) the mutating webhook, as a MutatingWebhookConfiguration applied to
  // a running cluster: pod creates from then on go through it.
  void register_webhook(AdmissionWebhook webhook);
  // Calls made to the admission webhook, and how many failed.
  int webhook_calls() const;
  int webhook_failures() const;

  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allox::emulator
