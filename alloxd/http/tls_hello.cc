#include "alloxd/http/tls_hello.h"

namespace allox::extender {

namespace {
constexpr std::size_t kRecordHeader = 5;      // type, version (2), length (2)
constexpr unsigned char kHandshakeType = 22;  // ContentType handshake (RFC 8446, 5.1)
// A TLSPlaintext fragment is at most 2^14 bytes; 2,048 more covers the older protocols'
// compressed and ciphertext records, never a first record but harmless to allow.
constexpr std::size_t kMaxRecordBody = (1u << 14) + 2048;
}  // namespace

std::size_t tls_first_record_bytes(std::string_view read) {
  if (read.size() < kRecordHeader) {
    if (!read.empty() && static_cast<unsigned char>(read[0]) != kHandshakeType) return read.size();
    return kRecordHeader;
  }
  if (static_cast<unsigned char>(read[0]) != kHandshakeType) return read.size();
  const std::size_t length = static_cast<std::size_t>(static_cast<unsigned char>(read[3])) << 8 |
                             static_cast<unsigned char>(read[4]);
  if (length > kMaxRecordBody) return read.size();
  return kRecordHeader + length;
}

}  // namespace allox::extender
