// KubeClient over cpprestsdk's http_client. Its timeout is an inactivity timer (re-armed by
// every read), which is what a watch needs; stop() cancels a token every request is linked to.
#include "extender/kube/client.h"

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <mutex>

namespace allox::kube {

namespace http = web::http;

struct KubeClient::Impl {
  KubeClientOptions options;
  pplx::cancellation_token_source stop_source;
  std::unique_ptr<http::client::http_client> calls;  // one-shot calls share connections

  std::unique_ptr<http::client::http_client> make_client(std::chrono::milliseconds timeout) const {
    http::client::http_client_config config;
    config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
    if (!options.ca_file.empty()) {
      std::string ca = options.ca_file;
      config.set_ssl_context_callback([ca](boost::asio::ssl::context& context) {
        boost::system::error_code ignored;  // a bad CA file fails the handshake, naming TLS
        context.load_verify_file(ca, ignored);
      });
    }
    return std::make_unique<http::client::http_client>(options.url, config);
  }

  http::http_request make_request(std::string_view method, const std::string& path,
                                  const std::string& body, const std::string& content_type) const {
    http::http_request request{http::method(method)};
    request.set_request_uri(path);
    if (!options.token.empty()) request.headers().add("Authorization", "Bearer " + options.token);
    request.headers().add("Accept", "application/json");
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      request.set_body(body, content_type);
    }
    return request;
  }
};

KubeClient::KubeClient(KubeClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->calls = impl_->make_client(impl_->options.call_timeout);
}

KubeClient::~KubeClient() {
  stop();
}

void KubeClient::stop() {
  if (!stopped_.exchange(true)) impl_->stop_source.cancel();
}

Expected<KubeResponse> KubeClient::call(std::string_view method, const std::string& path,
                                        const std::string& body, const std::string& content_type) {
  const std::string what = std::string(method) + " " + path;
  if (stopped()) return Error{what + ": the API client is stopped"};
  try {
    http::http_response response =
        impl_->calls
            ->request(impl_->make_request(method, path, body, content_type),
                      impl_->stop_source.get_token())
            .get();
    return KubeResponse{response.status_code(), response.extract_utf8string(true).get()};
  } catch (const std::exception& e) {
    if (stopped()) return Error{what + ": the API client is stopped"};
    return Error{what + ": cannot reach the API server: " + e.what()};
  }
}

Expected<KubeResponse> KubeClient::stream(
    const std::string& path, std::chrono::milliseconds idle_timeout,
    const std::function<bool(std::string_view line)>& on_line) {
  const std::string what = "GET " + path;
  if (stopped()) return Error{what + ": the API client is stopped"};
  try {
    // Its own client: a watch holds its connection, and its timeout is the idle bound.
    auto client = impl_->make_client(idle_timeout);
    http::http_response response =
        client->request(impl_->make_request("GET", path, "", ""), impl_->stop_source.get_token())
            .get();
    if (response.status_code() != 200) {
      return KubeResponse{response.status_code(), response.extract_utf8string(true).get()};
    }
    auto buffer = response.body().streambuf();
    std::string line;
    std::vector<char> chunk(64 << 10);
    while (true) {
      // Wait for one byte (or the end), then take whatever else has arrived without waiting.
      auto first = buffer.bumpc().get();
      if (first == decltype(buffer)::traits::eof()) break;
      std::size_t n = 1;
      chunk[0] = static_cast<char>(first);
      std::size_t ready = std::min(buffer.in_avail(), chunk.size() - 1);
      if (ready > 0) {
        n += buffer.getn(reinterpret_cast<std::uint8_t*>(chunk.data() + 1), ready).get();
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (chunk[i] != '\n') {
          line.push_back(chunk[i]);
          if (line.size() > impl_->options.max_line_bytes) {
            return Error{what + ": a stream line is longer than " +
                         std::to_string(impl_->options.max_line_bytes) + " bytes"};
          }
          continue;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty() && !on_line(line)) return KubeResponse{200, ""};
        line.clear();
      }
    }
    // The end of the body: a clean end of the chunked stream, or a broken connection.
    response.content_ready().wait();
    if (!line.empty() && !on_line(line)) return KubeResponse{200, ""};
    return KubeResponse{200, ""};
  } catch (const std::exception& e) {
    if (stopped()) return Error{what + ": the API client is stopped"};
    return Error{what + ": the stream broke: " + e.what()};
  }
}

std::string escape(std::string_view text) {
  return web::uri::encode_data_string(std::string(text));
}

}  // namespace allox::kube
