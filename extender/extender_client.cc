#include "extender/extender_client.h"

#include <cpprest/http_client.h>

namespace allox::extender {

struct ExtenderClient::Impl {
  Impl(const std::string& server, std::chrono::milliseconds timeout)
      : client(utility::conversions::to_string_t(server), config(timeout)) {}
  static web::http::client::http_client_config config(std::chrono::milliseconds timeout) {
    web::http::client::http_client_config c;
    c.set_timeout(timeout);
    return c;
  }
  web::http::client::http_client client;
  std::string admin_token;
};

ExtenderClient::ExtenderClient(const std::string& server, std::string admin_token,
                               std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(server, timeout)) {
  impl_->admin_token = std::move(admin_token);
}

ExtenderClient::~ExtenderClient() = default;

namespace {

// The body of a 200 answer, as text.
Expected<std::string> exchange_text(web::http::client::http_client& client,
                                    web::http::http_request request, const std::string& what) {
  try {
    web::http::http_response response = client.request(request).get();
    std::string text = response.extract_utf8string(true).get();
    if (response.status_code() != web::http::status_codes::OK) {
      return Error{what + ": HTTP " + std::to_string(response.status_code()) + ": " + text};
    }
    return text;
  } catch (const std::exception& e) {
    return Error{what + ": " + e.what()};
  }
}

Expected<nlohmann::json> exchange(web::http::client::http_client& client,
                                  web::http::http_request request, const std::string& what) {
  auto text = exchange_text(client, std::move(request), what);
  if (!text) return text.error();
  nlohmann::json parsed = nlohmann::json::parse(*text, nullptr, false);
  if (parsed.is_discarded()) return Error{what + ": the answer is not JSON: " + *text};
  return parsed;
}

}  // namespace

Expected<nlohmann::json> ExtenderClient::get(const std::string& path) {
  web::http::http_request request(web::http::methods::GET);
  request.set_request_uri(path);
  return exchange(impl_->client, request, "GET " + path);
}

Expected<std::string> ExtenderClient::get_text(const std::string& path) {
  web::http::http_request request(web::http::methods::GET);
  request.set_request_uri(path);
  return exchange_text(impl_->client, request, "GET " + path);
}

Expected<nlohmann::json> ExtenderClient::post(const std::string& path, const nlohmann::json& body,
                                              bool admin) {
  web::http::http_request request(web::http::methods::POST);
  request.set_request_uri(path);
  request.set_body(body.dump(), "application/json");
  if (admin) request.headers().add("Authorization", "Bearer " + impl_->admin_token);
  return exchange(impl_->client, request, "POST " + path);
}

Expected<std::string> ExtenderClient::post_text(const std::string& path, std::string body) {
  web::http::http_request request(web::http::methods::POST);
  request.set_request_uri(path);
  request.set_body(std::move(body), "application/json");
  return exchange_text(impl_->client, request, "POST " + path);
}

std::string path_segment(const std::string& id) {
  return web::uri::encode_data_string(id);
}

}  // namespace allox::extender
