// A scripted HTTP/1.1 server for the kube client tests: each request goes to a handler that
// answers at once or streams a chunked body line by line (a watch), so tests can play the API
// server's protocol exactly, including its failures (garbage lines, broken streams, 410s).
// Connections are kept alive between one-shot answers, as the API server keeps them; a streamed
// answer ends its connection. Each request records the connection it came on. Thread-safe.
//
// ScriptedApi is the set-up the kube tests (client, events, informer, lease, pods) share: a
// scripted server and a KubeClient of it.
#pragma once

// clang-format off
#include <utility>  // before Boost 1.74 asio, which uses std::exchange without including it
#include <boost/asio.hpp>
// clang-format on
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"

namespace allox::kube::testing {

// Lines a test feeds into a streaming reply.
class LineChannel {
 public:
  void push(std::string line);
  // Ends the stream cleanly (terminating chunk) once the pushed lines are written.
  void close();
  // Ends the stream by dropping the connection (no terminating chunk).
  void break_connection();
  enum class Next { kLine, kClose, kBreak };
  // Waits for the next thing to do; kLine fills `line`.
  Next next(std::string& line);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  bool closed_ = false, broken_ = false;
};

struct ScriptedRequest {
  std::string method, target, body, content_type, authorization;
  int connection = 0;  // the connection it came on, numbered from 0 in the order accepted
};

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::shared_ptr<LineChannel> stream;  // set: a chunked 200 reply fed from the channel
  // Set: instead of an answer, these bytes as they are (maybe none), then the connection is
  // dropped: a server that died with the request, or part way through its answer.
  std::optional<std::string> raw_then_drop = std::nullopt;
  // The answer (kept-alive as any other), then the server closes the connection: a server
  // ending a connection it sees as idle.
  bool close_after = false;
};

class ScriptedServer {
 public:
  using Handler = std::function<ScriptedReply(const ScriptedRequest&)>;
  explicit ScriptedServer(Handler handler);
  ~ScriptedServer();

  std::string url() const { return url_; }
  std::vector<ScriptedRequest> requests() const;
  // Requests whose target starts with `prefix` and method is `method`.
  int count(const std::string& method, const std::string& prefix) const;
  // Waits until `enough(requests())` holds, looking again as each request arrives (an event, not
  // a poll); false when `timeout` passed first.
  bool wait_for(const std::function<bool(const std::vector<ScriptedRequest>&)>& enough,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

 private:
  void serve(boost::asio::ip::tcp::socket socket, int number);

  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string url_;
  std::thread accept_thread_;
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;  // a request was added to requests_
  bool stopping_ = false;
  int accepted_ = 0;
  std::vector<ScriptedRequest> requests_;
  std::vector<std::thread> connections_;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::shared_ptr<LineChannel>> channels_;
};

// A scripted API server and a client of it (no token, plain HTTP).
struct ScriptedApi {
  explicit ScriptedApi(ScriptedServer::Handler handler) : server(std::move(handler)) {}
  ScriptedServer server;
  KubeClient client{{server.url(), "", ""}};
};

}  // namespace allox::kube::testing
