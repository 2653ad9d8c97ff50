// A raw HTTP/1.1 client for the emulator tests (Boost.Beast, synchronous): any method and
// Content-Type (PATCH with merge or JSON patch), and a watch reader that returns a streamed
// response line by line and tells a clean end (last chunk) from a dropped connection.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace allox::emulator::testing {

struct Reply {
  int status = 0;  // 0: the request failed (refused, timed out)
  std::string body;
  std::string content_type;
};

Reply request(const std::string& url, const std::string& method, const std::string& target,
              const std::string& body = "", const std::string& token = "",
              const std::string& content_type = "application/json");

class WatchReader {
 public:
  // Opens GET url+target; status() is the response status once the header arrived.
  WatchReader(const std::string& url, const std::string& target, const std::string& token);
  ~WatchReader();
  int status() const;
  // The next line (without its newline), or nullopt when the stream ended or `wait` passed.
  std::optional<std::string> next_line(std::chrono::milliseconds wait = std::chrono::seconds(5));
  // After next_line() returned nullopt: true when the server ended the body properly.
  bool ended_cleanly() const;
  bool ended() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace allox::emulator::testing
