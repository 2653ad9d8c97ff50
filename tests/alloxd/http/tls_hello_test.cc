// alloxd/http/tls_hello.h: how much of a connection's start its first TLS record needs.
#include "alloxd/http/tls_hello.h"

#include <gtest/gtest.h>

#include <string>

namespace allox::extender {
namespace {

std::string record_header(unsigned char type, std::size_t length) {
  return {static_cast<char>(type), 3, 1, static_cast<char>(length >> 8),
          static_cast<char>(length & 0xff)};
}

TEST(TlsHelloTest, TheHeaderIsNeededFirstThenItsWholeRecord) {
  EXPECT_EQ(5u, tls_first_record_bytes(""));
  EXPECT_EQ(5u, tls_first_record_bytes(std::string("\x16\x03\x01", 3)));
  const std::string header = record_header(22, 512);
  EXPECT_EQ(517u, tls_first_record_bytes(header));
  EXPECT_EQ(517u, tls_first_record_bytes(header + std::string(100, 'h')));
  EXPECT_EQ(517u, tls_first_record_bytes(header + std::string(512, 'h')));
}

TEST(TlsHelloTest, WhatCannotBeAClientHelloNeedsNothingMore) {
  // Plain HTTP on the TLS port: the handshake refuses it at once, nothing is waited for.
  EXPECT_EQ(3u, tls_first_record_bytes("GET"));
  EXPECT_EQ(18u, tls_first_record_bytes("GET / HTTP/1.1\r\n\r\n"));
  // A record longer than TLS allows.
  const std::string huge = record_header(22, 0xffff);
  EXPECT_EQ(huge.size(), tls_first_record_bytes(huge));
  EXPECT_EQ(5u + (1u << 14), tls_first_record_bytes(record_header(22, 1u << 14)));
}

}  // namespace
}  // namespace allox::extender
