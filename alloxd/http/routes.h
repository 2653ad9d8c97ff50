// alloxd's HTTP routes, as a pure function from a request to a reply, so tests can drive every
// endpoint without sockets and the HTTP server (http_server.h) stays a thin shell.
//
//   POST   /filter /prioritize /bind /preempt   kube-scheduler's extender verbs (wire.h)
//   POST   /admission/gate     the gate webhook: AdmissionReview v1 (admission.h); 400 naming
//                              the field when malformed
//   GET    /healthz            200 while the process serves
//   GET    /readyz             200 once the inventory is loaded and planned, else 503
//   GET    /metrics            Prometheus text format
//   GET    /v1/fairness /v1/queue /v1/jobs/{id}   JSON reports (job ids contain '/')
//   POST   /v1/profiles        profile or progress samples (admin token)
//   POST   /v1/jobs/{id}/done  the job finished (admin token)
//   DELETE /v1/jobs/{id}       remove a queued job; its pods are refused (admin token)
//   GET    /                   the status page for people
//
// A well-formed extender request always gets 200 (kube-scheduler ignores other bodies); a
// malformed one gets 400 with {"error": "..."} naming the problem and changes nothing. Admin
// endpoints want `Authorization: Bearer <admin_token>` (401 without, 403 when alloxd has no token
// configured). Thread-safe: the service is.
#pragma once

#include <string>

#include "alloxd/http/http_message.h"
#include "alloxd/service.h"
#include "alloxd/web/metrics.h"

namespace allox::extender {

// The largest body a request may carry, from its method and path (the listener's own
// max_body_bytes applies too): with real-time request threads (thread_priority.h), /filter and
// /prioritize carry at most limits.realtime_filter_body_bytes and name at most
// limits.realtime_node_names nodes (413 beyond), so no one request holds a real-time thread for
// long; unbounded otherwise.
std::size_t body_limit(const ExtenderService& service, const HttpRequest& head);

// Which metrics family a path belongs to.
Verb verb_of(const std::string& path);

HttpReply route(ExtenderService& service, const HttpRequest& request);

// False only for what kube-scheduler waits on in its scheduling cycle and answers from memory
// (/filter, /prioritize, /preempt) and the probes (/healthz, /readyz): those are answered on the
// I/O threads. Everything else runs on the blocking pool: /bind (an fsync and the API server),
// and the reports, /metrics, the admin API and the status page, so a /filter never queues
// behind a report rendered on its connection's thread, and with real-time request threads no
// report runs real-time (docs/performance.md, "Real-time request threads").
bool may_block(const HttpRequest& request);

}  // namespace allox::extender
