#include "tests/kube/scripted_server.h"

#include <sstream>

namespace allox::kube::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

void LineChannel::push(std::string line) {
  {
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  cv_.notify_all();
}

void LineChannel::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void LineChannel::break_connection() {
  {
    std::lock_guard lock(mu_);
    broken_ = true;
  }
  cv_.notify_all();
}

LineChannel::Next LineChannel::next(std::string& line) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !lines_.empty() || closed_ || broken_; });
  if (broken_) return Next::kBreak;
  if (!lines_.empty()) {
    line = std::move(lines_.front());
    lines_.pop_front();
    return Next::kLine;
  }
  return Next::kClose;
}

ScriptedServer::ScriptedServer(Handler handler)
    : handler_(std::move(handler)),
      acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  url_ = "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  accept_thread_ = std::thread([this] {
    while (true) {
      boost::system::error_code error;
      tcp::socket socket(io_);
      acceptor_.accept(socket, error);
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (error) continue;
      connections_.emplace_back(
          [this, s = std::move(socket), n = accepted_++]() mutable { serve(std::move(s), n); });
    }
  });
}

ScriptedServer::~ScriptedServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& channel : channels_) channel->break_connection();
    for (auto& socket : sockets_) {
      boost::system::error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
    }
  }
  // Wake the blocking accept with one last connection.
  {
    boost::system::error_code ignored;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ignored);
  }
  accept_thread_.join();
  for (auto& t : connections_) t.join();
}

std::vector<ScriptedRequest> ScriptedServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int ScriptedServer::count(const std::string& method, const std::string& prefix) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& r : requests_) n += r.method == method && r.target.rfind(prefix, 0) == 0;
  return n;
}

bool ScriptedServer::wait_for(
    const std::function<bool(const std::vector<ScriptedRequest>&)>& enough,
    std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return arrived_.wait_for(lock, timeout, [&] { return enough(requests_); });
}

void ScriptedServer::serve(tcp::socket plain, int number) {
  auto socket = std::make_shared<tcp::socket>(std::move(plain));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    sockets_.push_back(socket);
  }
  boost::system::error_code error;
  asio::streambuf buffer;
  ScriptedReply reply;
  while (true) {  // one request after another on the connection, until a stream or a close
    std::size_t head_size = asio::read_until(*socket, buffer, "\r\n\r\n", error);
    if (error) return;
    std::istringstream head(std::string(asio::buffers_begin(buffer.data()),
                                        asio::buffers_begin(buffer.data()) + head_size));
    buffer.consume(head_size);
    ScriptedRequest request;
    request.connection = number;
    std::string version, line;
    head >> request.method >> request.target >> version;
    std::getline(head, line);
    std::size_t length = 0;
    while (std::getline(head, line) && line != "\r") {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "content-length") length = std::stoul(value);
      if (name == "content-type") request.content_type = value;
      if (name == "authorization") request.authorization = value;
    }
    if (buffer.size() < length) {
      asio::read(*socket, buffer, asio::transfer_exactly(length - buffer.size()), error);
      if (error) return;
    }
    request.body.assign(asio::buffers_begin(buffer.data()),
                        asio::buffers_begin(buffer.data()) + length);
    buffer.consume(length);
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    arrived_.notify_all();
    reply = handler_(request);
    if (reply.raw_then_drop) {
      asio::write(*socket, asio::buffer(*reply.raw_then_drop), error);
      socket->shutdown(tcp::socket::shutdown_both, error);
      socket->close(error);
      return;
    }
    if (reply.stream) break;
    std::ostringstream out;
    out << "HTTP/1.1 " << reply.status << " X\r\nContent-Type: application/json\r\n"
        << "Content-Length: " << reply.body.size() << "\r\n\r\n"
        << reply.body;
    asio::write(*socket, asio::buffer(out.str()), error);
    if (error) return;
    if (reply.close_after) {
      socket->shutdown(tcp::socket::shutdown_both, error);
      socket->close(error);
      return;
    }
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    channels_.push_back(reply.stream);
  }
  std::string start =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n";
  asio::write(*socket, asio::buffer(start), error);
  while (!error) {
    std::string next;
    switch (reply.stream->next(next)) {
      case LineChannel::Next::kLine: {
        next += "\n";
        std::ostringstream chunk;
        chunk << std::hex << next.size() << "\r\n" << next << "\r\n";
        asio::write(*socket, asio::buffer(chunk.str()), error);
        break;
      }
      case LineChannel::Next::kClose:
        asio::write(*socket, asio::buffer(std::string("0\r\n\r\n")), error);
        socket->shutdown(tcp::socket::shutdown_both, error);
        return;
      case LineChannel::Next::kBreak:
        socket->shutdown(tcp::socket::shutdown_both, error);
        socket->close(error);
        return;
    }
  }
}

}  // namespace allox::kube::testing
