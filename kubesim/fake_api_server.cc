#include "kubesim/fake_api_server.h"

// cpprestsdk defines a U() macro that breaks Boost headers included after it.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_client.h>
#include <fcntl.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kubesim/cluster_threads.h"
#include "core/thread_priority.h"

namespace allox::emulator {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

std::string percent_decode(const std::string& in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size() && std::isxdigit(in[i + 1]) && std::isxdigit(in[i + 2])) {
      out.push_back(static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else if (in[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

struct Target {
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
  std::string path;
};

Target parse_target(const std::string& target) {
  Target out;
  const auto question = target.find('?');
  out.path = target.substr(0, question);
  std::string segment;
  for (char c : out.path) {
    if (c == '/') {
      if (!segment.empty()) out.segments.push_back(percent_decode(segment));
      segment.clear();
    } else {
      segment.push_back(c);
    }
  }
  if (!segment.empty()) out.segments.push_back(percent_decode(segment));
  if (question != std::string::npos) {
    std::string rest = target.substr(question + 1);
    std::size_t start = 0;
    while (start <= rest.size()) {
      auto amp = rest.find('&', start);
      std::string pair =
          rest.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      auto eq = pair.find('=');
      if (!pair.empty()) {
        out.query[percent_decode(pair.substr(0, eq))] =
            eq == std::string::npos ? "" : percent_decode(pair.substr(eq + 1));
      }
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  return out;
}

bool truthy(const std::string& value) {
  return value == "1" || value == "true" || value == "True";
}

// The path resolved to a resource: which type, namespace, name, subresource.
struct Route {
  const ResourceType* type = nullptr;
  std::string namespace_name, name, subresource;
};

ApiResult<Route> resolve(const std::vector<std::string>& s) {
  std::size_t i = 0;
  std::string api_version;
  if (s.size() >= 2 && s[0] == "api") {
    api_version = s[1];
    i = 2;
  } else if (s.size() >= 3 && s[0] == "apis") {
    api_version = s[1] + "/" + s[2];
    i = 3;
  } else {
    return not_found("", "");
  }
  Route route;
  if (i + 1 < s.size() && s[i] == "namespaces") {
    route.namespace_name = s[i + 1];
    i += 2;
    if (i == s.size()) return not_found("namespaces", route.namespace_name);
  }
  if (i >= s.size()) return not_found("", "");
  route.type = find_resource(api_version, s[i]);
  if (route.type == nullptr) {
    return ApiError{404, "NotFound", "the server could not find the requested resource", "", ""};
  }
  if (!route.type->namespaced && !route.namespace_name.empty()) {
    return ApiError{404, "NotFound", "the server could not find the requested resource", "", ""};
  }
  if (i + 1 < s.size()) route.name = s[i + 1];
  if (i + 2 < s.size()) route.subresource = s[i + 2];
  if (i + 3 < s.size()) return not_found(route.type->plural, route.name);
  return route;
}

}  // namespace

struct FakeApiServer::Impl {
  FakeApiServerOptions options;
  ApiObjects objects;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::string url;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;
  std::list<std::shared_ptr<tcp::socket>> sockets;
  std::list<std::thread> connections;
  std::vector<FaultRule> faults;
  std::chrono::milliseconds stall{0};
  int unauthorized = 0;
  int watches = 0;
  int webhook_calls = 0, webhook_failures = 0;
  std::atomic<std::uint64_t> requests{0};
  std::map<std::string, std::uint64_t> requests_by_kind;  // under mu

  explicit Impl(FakeApiServerOptions o) : options(std::move(o)), objects(options.clock) {}

  using Request = http::request<http::string_body>;
  using Response = http::response<http::string_body>;

  Response reply(const Request& request, int status, const json& body) {
    Response response{static_cast<http::status>(status), request.version()};
    response.set(http::field::content_type, "application/json");
    response.keep_alive(request.keep_alive());
    response.body() = body.dump();
    response.prepare_payload();
    return response;
  }
  Response reply_error(const Request& request, const ApiError& error) {
    return reply(request, error.code, error.status());
  }

  // The first fault rule matching this request, if any (counted as used).
  std::optional<FaultRule> injected_fault(const std::string& method, const std::string& path) {
    std::lock_guard lock(mu);
    for (auto it = faults.begin(); it != faults.end(); ++it) {
      if ((!it->method.empty() && it->method != method) ||
          (!it->path_contains.empty() && path.find(it->path_contains) == std::string::npos)) {
        continue;
      }
      FaultRule rule = *it;
      if (it->count > 0 && --it->count == 0) faults.erase(it);
      return rule;
    }
    return std::nullopt;
  }

  // Sleeps for `delay`, or until the server stops.
  void wait_for(std::chrono::milliseconds delay) const {
    const auto until = std::chrono::steady_clock::now() + delay;
    while (!stopping.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min(delay, std::chrono::milliseconds(10)));
  }

  // Calls the admission webhook for a pod create (AdmissionReview v1).
  ApiResult<json> admit(const json& pod) {
    AdmissionWebhook hook;
    {
      std::lock_guard lock(mu);
      hook = *options.webhook;
    }
    const json meta = pod.value("metadata", json::object());
    const std::string ns = meta.value("namespace", "");
    if (!hook.namespaces.empty() && hook.namespaces.count(ns) == 0) return pod;
    const std::string scheduler = pod.value("spec", json::object()).value("schedulerName", "");
    if (!hook.scheduler_names.empty() && hook.scheduler_names.count(scheduler) == 0) return pod;
    std::string uid;
    {
      std::lock_guard lock(mu);
      uid = "admission-" + std::to_string(++webhook_calls);
    }
    json resource = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}};
    json kind = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
    json review = {{"apiVersion", "admission.k8s.io/v1"},
                   {"kind", "AdmissionReview"},
                   {"request",
                    {{"uid", uid},
                     {"kind", kind},
                     {"resource", resource},
                     {"requestKind", kind},
                     {"requestResource", resource},
                     {"name", meta.value("name", "")},
                     {"namespace", ns},
                     {"operation", "CREATE"},
                     {"userInfo", {{"username", "system:serviceaccount:allox-test:client"}}},
                     {"object", pod},
                     {"oldObject", nullptr},
                     {"dryRun", false},
                     {"options", {{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}}}}};
    auto failure = [&](const std::string& why) -> ApiResult<json> {
      {
        std::lock_guard lock(mu);
        ++webhook_failures;
      }
      if (!hook.fail_closed) return pod;
      return ApiError{
          500, "InternalError",
          "Internal error occurred: failed calling webhook \"" + hook.name + "\": " + why, "", ""};
    };
    std::string text;
    int status = 0;
    try {
      web::http::client::http_client_config config;
      config.set_timeout(hook.timeout);
      if (!hook.ca_file.empty()) {
        std::string ca = hook.ca_file;
        config.set_ssl_context_callback([ca](asio::ssl::context& context) {
          boost::system::error_code ignored;
          context.load_verify_file(ca, ignored);
        });
      }
      web::http::client::http_client client(hook.url, config);
      web::http::http_request request(web::http::methods::POST);
      request.set_body(review.dump(), "application/json");
      auto response = client.request(request).get();
      status = response.status_code();
      text = response.extract_utf8string(true).get();
    } catch (const std::exception& e) {
      return failure(std::string("failed to call webhook: ") + e.what());
    }
    if (status != 200) {
      return failure("received invalid webhook response: HTTP " + std::to_string(status));
    }
    json answer = json::parse(text, nullptr, false);
    if (!answer.is_object() || !answer.contains("response") || !answer["response"].is_object()) {
      return failure("received invalid webhook response: no response object");
    }
    const json& response = answer["response"];
    if (response.value("uid", "") != uid) {
      return failure("expected response.uid=\"" + uid + "\", got \"" + response.value("uid", "") +
                     "\"");
    }
    if (!response.value("allowed", false)) {
      json status_body = response.value("status", json::object());
      int code = status_body.value("code", 400);
      return ApiError{code, status_body.value("reason", "BadRequest"),
                      "admission webhook \"" + hook.name + "\" denied the request: " +
                          status_body.value("message", "without explanation"),
                      "", ""};
    }
    if (!response.contains("patch")) return pod;
    if (response.value("patchType", "") != "JSONPatch") {
      return failure("unsupported patch type \"" + response.value("patchType", "") + "\"");
    }
    const std::string encoded = response["patch"].get<std::string>();
    std::string decoded(beast::detail::base64::decoded_size(encoded.size()), '\0');
    auto [written, read] =
        beast::detail::base64::decode(decoded.data(), encoded.data(), encoded.size());
    decoded.resize(written);
    json patch = json::parse(decoded, nullptr, false);
    if (read != encoded.size() || !patch.is_array()) {
      return failure("the webhook's patch is not a base64 JSON patch");
    }
    try {
      return pod.patch(patch);
    } catch (const json::exception& e) {
      return failure(std::string("the webhook's patch does not apply: ") + e.what());
    }
  }

  // Serves a watch on the connection until it ends. Returns false when the connection must be
  // dropped (broken on purpose, or the client went away).
  bool serve_watch(tcp::socket& socket, const Request& request, WatchRequest watch,
                   double timeout_seconds) {
    auto opened = objects.watch(watch);
    if (auto* error = std::get_if<ApiError>(&opened)) {
      auto response = reply_error(request, *error);
      beast::error_code ec;
      http::write(socket, response, ec);
      return !ec;
    }
    auto stream = std::get<std::shared_ptr<WatchStream>>(opened);
    {
      std::lock_guard lock(mu);
      ++watches;
    }
    struct Counted {
      Impl* impl;
      ~Counted() {
        std::lock_guard lock(impl->mu);
        --impl->watches;
      }
    } counted{this};
    http::response<http::empty_body> header{http::status::ok, request.version()};
    header.set(http::field::content_type, "application/json");
    header.set(http::field::cache_control, "no-cache, private");
    header.chunked(true);
    header.keep_alive(request.keep_alive());
    http::response_serializer<http::empty_body> serializer{header};
    beast::error_code ec;
    http::write_header(socket, serializer, ec);
    if (ec) return false;
    const auto deadline = timeout_seconds > 0
                              ? std::chrono::steady_clock::now() +
                                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(timeout_seconds))
                              : std::chrono::steady_clock::time_point::max();
    std::string lines;
    while (!stopping.load()) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      WatchEvent event;
      auto next = stream->next(event, std::chrono::milliseconds(200));
      if (next == WatchStream::Next::kTimeout) continue;
      bool closed = next == WatchStream::Next::kClosed;
      if (!closed) {
        // Events already waiting go out in one write, as kube-apiserver's watch handler flushes
        // only when its channel is empty: one wake-up and one send for a burst, not one each.
        lines = event.line();
        while (lines.size() < (256u << 10)) {
          auto more = stream->next(event, std::chrono::milliseconds(0));
          if (more == WatchStream::Next::kEvent) {
            lines += event.line();
            continue;
          }
          closed = more == WatchStream::Next::kClosed;
          break;
        }
        asio::write(socket, http::make_chunk(asio::buffer(lines)), ec);
        if (ec) return false;
      }
      if (closed) {
        if (stream->broken()) return false;  // no terminating chunk: the client sees an error
        break;
      }
    }
    if (stopping.load()) return false;
    asio::write(socket, http::make_chunk_last(), ec);
    return !ec && request.keep_alive();
  }

  // One request; returns false when the connection must close. Watches are written here.
  bool handle(tcp::socket& socket, Request& request) {
    requests.fetch_add(1, std::memory_order_relaxed);
    const std::string method(request.method_string());
    const Target target = parse_target(std::string(request.target()));
    auto send = [&](Response response) {
      beast::error_code ec;
      http::write(socket, response, ec);
      return !ec && response.keep_alive();
    };
    std::chrono::milliseconds delay;
    {
      std::lock_guard lock(mu);
      delay = stall;
    }
    if (delay.count() > 0) wait_for(delay);
    if (!options.token.empty()) {
      auto auth = request.find(http::field::authorization);
      if (auth == request.end() || auth->value() != "Bearer " + options.token) {
        {
          std::lock_guard lock(mu);
          ++unauthorized;
        }
        return send(reply_error(request, ApiError{401, "Unauthorized", "Unauthorized", "", ""}));
      }
    }
    if (auto fault = injected_fault(method, target.path)) {
      if (fault->delay.count() > 0) wait_for(fault->delay);
      if (fault->status != 0) {
        return send(reply_error(
            request, ApiError{fault->status, fault->status >= 500 ? "InternalError" : "BadRequest",
                              "injected failure (fake API server fault injection)", "", ""}));
      }
    }
    if (target.segments.size() == 1 &&
        (target.segments[0] == "healthz" || target.segments[0] == "readyz" ||
         target.segments[0] == "livez")) {
      Response response{http::status::ok, request.version()};
      response.set(http::field::content_type, "text/plain");
      response.keep_alive(request.keep_alive());
      response.body() = "ok";
      response.prepare_payload();
      return send(std::move(response));
    }
    if (target.segments.size() == 1 && target.segments[0] == "version") {
      return send(reply(request, 200,
                        {{"major", "1"}, {"minor", "28"}, {"gitVersion", "v1.28.7-allox-fake"}}));
    }
    auto resolved = resolve(target.segments);
    if (auto* error = std::get_if<ApiError>(&resolved)) return send(reply_error(request, *error));
    const Route& route = std::get<Route>(resolved);
    const ResourceType& type = *route.type;
    {
      auto watch_param = target.query.find("watch");
      const bool watch = watch_param != target.query.end() &&
                         (watch_param->second == "true" || watch_param->second == "1");
      std::string kind = (watch ? std::string("WATCH") : method) + " " + type.plural;
      if (!route.subresource.empty()) kind += "/" + route.subresource;
      std::lock_guard lock(mu);
      ++requests_by_kind[kind];
    }
    auto query = [&](const char* key) {
      auto it = target.query.find(key);
      return it == target.query.end() ? std::string() : it->second;
    };
    auto answer = [&](const ApiResult<ObjectPtr>& result, int ok_status) {
      if (auto* error = std::get_if<ApiError>(&result)) return send(reply_error(request, *error));
      return send(reply(request, ok_status, *std::get<ObjectPtr>(result)));
    };
    auto body_json = [&]() { return json::parse(request.body(), nullptr, false); };

    if (route.name.empty()) {
      if (request.method() == http::verb::get) {
        auto selector =
            Selector::parse(type.plural, query("fieldSelector"), query("labelSelector"));
        if (auto* error = std::get_if<ApiError>(&selector))
          return send(reply_error(request, *error));
        if (truthy(query("watch"))) {
          WatchRequest watch;
          watch.resource = &type;
          watch.namespace_name = route.namespace_name;
          watch.selector = std::get<Selector>(selector);
          watch.resource_version = query("resourceVersion");
          watch.allow_bookmarks = truthy(query("allowWatchBookmarks"));
          double timeout = 0;
          if (!query("timeoutSeconds").empty()) {
            try {
              timeout = std::stod(query("timeoutSeconds"));
            } catch (const std::exception&) {
              return send(reply_error(request, bad_request("timeoutSeconds: not a number")));
            }
          }
          return serve_watch(socket, request, std::move(watch), timeout);
        }
        ListRequest list;
        list.resource = &type;
        list.namespace_name = route.namespace_name;
        list.selector = std::get<Selector>(selector);
        list.continue_token = query("continue");
        if (!query("limit").empty()) {
          try {
            list.limit = std::stoul(query("limit"));
          } catch (const std::exception&) {
            return send(reply_error(request, bad_request("limit: not a number")));
          }
        }
        auto listed = objects.list(list);
        if (auto* error = std::get_if<ApiError>(&listed)) return send(reply_error(request, *error));
        return send(reply(request, 200, std::get<json>(listed)));
      }
      if (request.method() == http::verb::post) {
        if (type.namespaced && route.namespace_name.empty()) {
          return send(reply_error(
              request,
              ApiError{405, "MethodNotAllowed", "create needs a namespace in the path", "", ""}));
        }
        json body = body_json();
        if (body.is_discarded()) {
          return send(reply_error(request, bad_request("the request body is not JSON")));
        }
        return answer(objects.create(type, route.namespace_name, std::move(body)), 201);
      }
      return send(reply_error(request, ApiError{405, "MethodNotAllowed",
                                                "the server does not allow this method on the "
                                                "requested resource",
                                                "", ""}));
    }

    if (route.subresource == "binding") {
      if (type.kind != "Pod" || request.method() != http::verb::post) {
        return send(reply_error(
            request, ApiError{405, "MethodNotAllowed", "binding takes POST only", "", ""}));
      }
      json body = body_json();
      if (body.is_discarded()) {
        return send(reply_error(request, bad_request("the request body is not JSON")));
      }
      auto bound = objects.bind(route.namespace_name, route.name, body);
      if (auto* error = std::get_if<ApiError>(&bound)) return send(reply_error(request, *error));
      return send(reply(request, 201, std::get<json>(bound)));
    }
    if (!route.subresource.empty() && route.subresource != "status") {
      return send(
          reply_error(request, not_found(type.plural + "/" + route.subresource, route.name)));
    }
    const bool status_only = route.subresource == "status";
    switch (request.method()) {
      case http::verb::get:
        return answer(objects.get(type, route.namespace_name, route.name), 200);
      case http::verb::put: {
        json body = body_json();
        if (body.is_discarded()) {
          return send(reply_error(request, bad_request("the request body is not JSON")));
        }
        return answer(
            objects.update(type, route.namespace_name, route.name, std::move(body), status_only),
            200);
      }
      case http::verb::patch: {
        auto patch = patch_type(std::string(request[http::field::content_type]));
        if (auto* error = std::get_if<ApiError>(&patch)) return send(reply_error(request, *error));
        return answer(objects.patch(type, route.namespace_name, route.name,
                                    std::get<PatchType>(patch), request.body(), status_only),
                      200);
      }
      case http::verb::delete_: {
        json options = request.body().empty() ? json(nullptr) : body_json();
        if (options.is_discarded()) {
          return send(reply_error(request, bad_request("DeleteOptions: not JSON")));
        }
        if (!query("gracePeriodSeconds").empty()) {
          if (!options.is_object()) options = json::object();
          options["gracePeriodSeconds"] = std::atoi(query("gracePeriodSeconds").c_str());
        }
        if (!query("propagationPolicy").empty()) {
          if (!options.is_object()) options = json::object();
          options["propagationPolicy"] = query("propagationPolicy");
        }
        const bool default_policy =
            !options.is_object() ||
            (!options.contains("propagationPolicy") && !options.contains("orphanDependents"));
        auto removed = objects.remove(type, route.namespace_name, route.name, options);
        if (auto* error = std::get_if<ApiError>(&removed)) return send(reply_error(request, *error));
        Response response = reply(request, 200, *std::get<ObjectPtr>(removed));
        // kube-apiserver warns that a batch/v1 Job deleted without a policy keeps its pods.
        if (type.kind == "Job" && default_policy) {
          response.set(http::field::warning, kOrphanedPodsWarning);
        }
        return send(std::move(response));
      }
      default:
        return send(reply_error(request, ApiError{405, "MethodNotAllowed",
                                                  "the server does not allow this method on the "
                                                  "requested resource",
                                                  "", ""}));
    }
  }

  void serve(std::shared_ptr<tcp::socket> socket) {
    beast::flat_buffer buffer;
    while (!stopping.load()) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      beast::error_code ec;
      http::read(*socket, buffer, parser, ec);
      if (ec) break;
      Request request = parser.release();
      if (!handle(*socket, request)) break;
    }
    beast::error_code ignored;
    socket->shutdown(tcp::socket::shutdown_both, ignored);
    socket->close(ignored);
    std::lock_guard lock(mu);
    sockets.remove(socket);
  }

  void accept_loop() {
    while (!stopping.load()) {
      auto socket = std::make_shared<tcp::socket>(io);
      beast::error_code ec;
      acceptor.accept(*socket, ec);
      if (ec) {
        if (stopping.load()) return;
        continue;
      }
      socket->set_option(tcp::no_delay(true), ec);
      ::fcntl(socket->native_handle(), F_SETFD, FD_CLOEXEC);
      std::lock_guard lock(mu);
      if (stopping.load()) return;
      sockets.push_back(socket);
      connections.emplace_back([this, socket] {
        become_cluster_thread("emu-api-conn");
        serve(socket);
      });
    }
  }
};

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& impl = *impl_;
  beast::error_code ec;
  auto address = asio::ip::make_address(impl.options.host, ec);
  if (ec) throw std::runtime_error("fake API server: bad host " + impl.options.host);
  tcp::endpoint endpoint{address, static_cast<unsigned short>(impl.options.port)};
  impl.acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl.acceptor.bind(endpoint, ec);
  if (!ec) impl.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("fake API server: cannot listen on " + impl.options.host + ":" +
                             std::to_string(impl.options.port) + ": " + ec.message());
  }
  // Child processes (alloxd launched by a replay) must not inherit the listening socket.
  ::fcntl(impl.acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  impl.url =
      "http://" + impl.options.host + ":" + std::to_string(impl.acceptor.local_endpoint().port());
  if (impl.options.webhook) {
    impl.objects.set_admission([&impl](const json& pod) { return impl.admit(pod); });
  }
  impl.accept_thread = std::thread([&impl] {
    become_cluster_thread("emu-api-accept");
    impl.accept_loop();
  });
}

Expected<std::unique_ptr<FakeApiServer>> FakeApiServer::start(FakeApiServerOptions options) {
  try {
    return std::make_unique<FakeApiServer>(std::move(options));
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

FakeApiServer::~FakeApiServer() {
  stop();
}

void FakeApiServer::stop() {
  Impl& impl = *impl_;
  if (impl.stopping.exchange(true)) return;
  // shutdown() wakes the accept() blocked on the listening socket (it fails with EINVAL); the
  // acceptor object itself is the accept thread's until it is joined.
  ::shutdown(impl.acceptor.native_handle(), SHUT_RDWR);
  if (impl.accept_thread.joinable()) impl.accept_thread.join();
  beast::error_code ignored;
  impl.acceptor.close(ignored);
  impl.objects.break_watches();
  std::list<std::thread> threads;
  {
    std::lock_guard lock(impl.mu);
    for (auto& socket : impl.sockets) {
      ::shutdown(socket->native_handle(), SHUT_RDWR);
    }
    threads.swap(impl.connections);
  }
  for (auto& thread : threads) thread.join();
}

std::string FakeApiServer::url() const {
  return impl_->url;
}

ApiObjects& FakeApiServer::objects() {
  return impl_->objects;
}

void FakeApiServer::add_node(const std::string& name,
                             const std::map<std::string, std::string>& allocatable,
                             const std::map<std::string, std::string>& labels) {
  json node_labels = {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}};
  for (const auto& [key, value] : labels) node_labels[key] = value;
  json node = {{"metadata", {{"name", name}, {"labels", node_labels}}},
               {"spec", json::object()},
               {"status",
                {{"capacity", allocatable},
                 {"allocatable", allocatable},
                 {"conditions", json::array({{{"type", "Ready"},
                                              {"status", "True"},
                                              {"reason", "KubeletReady"},
                                              {"message", "fake node, no kubelet"}}})}}}};
  auto created = impl_->objects.create(nodes_resource(), "", std::move(node));
  if (auto* error = std::get_if<ApiError>(&created)) {
    throw std::runtime_error("add_node " + name + ": " + error->message);
  }
}

void FakeApiServer::fail_requests(const FaultRule& rule) {
  std::lock_guard lock(impl_->mu);
  impl_->faults.push_back(rule);
}

void FakeApiServer::clear_faults() {
  std::lock_guard lock(impl_->mu);
  impl_->faults.clear();
}

void FakeApiServer::stall(std::chrono::milliseconds delay) {
  std::lock_guard lock(impl_->mu);
  impl_->stall = delay;
}

int FakeApiServer::unauthorized_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->unauthorized;
}

std::uint64_t FakeApiServer::requests() const {
  return impl_->requests.load();
}

std::map<std::string, std::uint64_t> FakeApiServer::requests_by_kind() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests_by_kind;
}

int FakeApiServer::open_watches() const {
  std::lock_guard lock(impl_->mu);
  return impl_->watches;
}

void FakeApiServer::register_webhook(AdmissionWebhook webhook) {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mu);
    impl.options.webhook = std::move(webhook);
  }
  impl.objects.set_admission([&impl](const json& pod) { return impl.admit(pod); });
}

int FakeApiServer::webhook_calls() const {
  std::lock_guard lock(impl_->mu);
  return impl_->webhook_calls;
}

int FakeApiServer::webhook_failures() const {
  std::lock_guard lock(impl_->mu);
  return impl_->webhook_failures;
}

}  // namespace allox::emulator
