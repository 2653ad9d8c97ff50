// The gate webhook's own listener (config `webhook:`): the API server calls it, so it serves
// POST /admission/gate (admission.h, through routes.h) and GET /healthz, and answers 404 to
// everything else; HTTPS from the Secret-mounted cert and key (plain HTTP when both are empty,
// for tests). One I/O thread: an admission review is a pure function of its body.
// Kept apart from the extender listener so kube-scheduler's verbs and the reports are never
// reachable through the port the API server is given.
#pragma once

#include <cstddef>
#include <memory>

#include "alloxd/config.h"
#include "alloxd/http/http_server.h"
#include "core/result.h"

namespace allox::extender {

class ExtenderService;

// The service must outlive the server. An error names the listen address or the PEM file.
Expected<std::unique_ptr<HttpServer>> start_webhook_server(ExtenderService& service,
                                                           const WebhookConfig& webhook,
                                                           std::size_t max_body_bytes);

}  // namespace allox::extender
