// One HTTP request and its reply as plain values: what alloxd/http/http_server.h hands to a handler
// and what the handler returns. No sockets, no parsing: routes.h and tests use them directly.
#pragma once

#include <string>

namespace allox::extender {

struct HttpRequest {
  std::string method;             // GET, POST, ...
  std::string path;               // percent-decoded, without the query string
  std::string authorization;      // the Authorization header, if any
  std::string body;
  std::string query;  // what follows '?' in the target, as sent (not decoded)
  int authorization_headers = 0;  // how many came: more than one is refused, never picked from
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

}  // namespace allox::extender
