#include "alloxd/http/webhook_server.h"

#include "alloxd/http/routes.h"
#include "alloxd/service.h"
#include "alloxd/verbs/admission.h"

namespace allox::extender {

Expected<std::unique_ptr<HttpServer>> start_webhook_server(ExtenderService& service,
                                                           const WebhookConfig& webhook,
                                                           std::size_t max_body_bytes) {
  HttpHandler handler;
  handler.serve = [&service](const HttpRequest& request) -> HttpReply {
    if (request.path == kGateWebhookPath || request.path == "/healthz") {
      return route(service, request);
    }
    return {404, "application/json",
            R"({"error":"the webhook listener serves only POST /admission/gate"})"};
  };
  HttpServerOptions options;
  options.host = webhook.listen.host;
  options.port = webhook.listen.port;
  options.max_body_bytes = max_body_bytes;
  options.max_unread_reply_bytes = service.config().limits.unread_reply_bytes;
  options.threads = 1;
  options.tls_cert_file = webhook.tls_cert_file;
  options.tls_key_file = webhook.tls_key_file;
  return HttpServer::start(std::move(handler), options);
}

}  // namespace allox::extender
