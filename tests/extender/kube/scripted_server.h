// A scripted HTTP/1.1 server for the kube client tests: each request goes to a handler that
// answers at once or streams a chunked body line by line (a watch), so tests can play the API
// server's protocol exactly, including its failures (garbage lines, broken streams, 410s).
// One connection per request (Connection: close). Thread-safe.
#pragma once

// clang-format off
#include <utility>  // before Boost 1.74 asio, which uses std::exchange without including it
#include <boost/asio.hpp>
// clang-format on
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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
};

struct ScriptedReply {
  int status = 200;
  std::string body;
  std::shared_ptr<LineChannel> stream;  // set: a chunked 200 reply fed from the channel
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

 private:
  void serve(boost::asio::ip::tcp::socket socket);

  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string url_;
  std::thread accept_thread_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::vector<ScriptedRequest> requests_;
  std::vector<std::thread> connections_;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::shared_ptr<LineChannel>> channels_;
};

}  // namespace allox::kube::testing
