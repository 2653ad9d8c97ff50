// What a connection writes around a handler's reply: the status line and headers, and the JSON
// body of an error the server answers itself. Pure functions.
#pragma once

#include <string>

#include "alloxd/http/http_message.h"

namespace allox::extender {

// Replaces `head` (its capacity kept: a connection reuses it) with the status line and headers
// of `reply` for an HTTP/1.`minor` client: Content-Type, Content-Length and, where the version's
// default differs from `keep_alive`, Connection; ends with the blank line.
void compose_reply_head(std::string& head, unsigned version, const HttpReply& reply,
                        bool keep_alive);

// {"error": message}, invalid UTF-8 replaced.
std::string error_body(const std::string& message);

}  // namespace allox::extender
