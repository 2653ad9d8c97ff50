#include "alloxd/http/request_threads.h"

#include <arpa/inet.h>

namespace allox::extender {

Expected<RequestThreads> parse_request_threads(std::string_view text) {
  if (text == "auto") return RequestThreads::kAuto;
  if (text == "normal") return RequestThreads::kNormal;
  if (text == "realtime") return RequestThreads::kRealtime;
  return Error{"auto, normal or realtime"};
}

const char* request_threads_name(RequestThreads threads) {
  switch (threads) {
    case RequestThreads::kAuto:
      return "auto";
    case RequestThreads::kNormal:
      return "normal";
    case RequestThreads::kRealtime:
      return "realtime";
  }
  return "auto";
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

RequestClassChoice choose_request_class(RequestThreads wanted, std::string_view listen_host,
                                        const Status& realtime) {
  switch (wanted) {
    case RequestThreads::kNormal:
      return {RequestClass::kNormal, "request_threads: normal"};
    case RequestThreads::kAuto:
      if (!is_loopback_host(listen_host)) {
        return {RequestClass::kNormal, "request_threads: auto: the extender listener (" +
                                           std::string(listen_host) +
                                           ") is not on loopback, so other hosts could make "
                                           "real-time threads run"};
      }
      if (!realtime) {
        return {RequestClass::kNormal, "request_threads: auto: " + realtime.message()};
      }
      return {RequestClass::kRealtime,
              "request_threads: auto: real-time granted, the extender listener on loopback"};
    case RequestThreads::kRealtime:
      if (!realtime) {
        return {RequestClass::kNormal, "request_threads: realtime: " + realtime.message()};
      }
      return {RequestClass::kRealtime, "request_threads: realtime"};
  }
  return {RequestClass::kNormal, "request_threads: normal"};
}

}  // namespace allox::extender
