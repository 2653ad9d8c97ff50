#include "alloxd/http/reply_head.h"

#include <boost/beast/http/status.hpp>
#include <charconv>
#include <iterator>
#include <nlohmann/json.hpp>

namespace allox::extender {

namespace {

void append_number(std::string& out, std::size_t n) {
  char digits[24];
  auto end = std::to_chars(std::begin(digits), std::end(digits), n).ptr;
  out.append(digits, end);
}

}  // namespace

void compose_reply_head(std::string& head, unsigned version, const HttpReply& reply,
                        bool keep_alive) {
  head.assign(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_number(head, static_cast<std::size_t>(reply.status));
  head += ' ';
  const auto reason =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(reply.status));
  head.append(reason.data(), reason.size());
  head += "\r\nContent-Type: ";
  head += reply.content_type;
  head += "\r\nContent-Length: ";
  append_number(head, reply.body.size());
  // HTTP/1.1 keeps a connection alive unless told; HTTP/1.0 closes it unless told.
  if (version >= 11 && !keep_alive) head += "\r\nConnection: close";
  if (version < 11 && keep_alive) head += "\r\nConnection: keep-alive";
  head += "\r\n\r\n";
}

std::string error_body(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

}  // namespace allox::extender
