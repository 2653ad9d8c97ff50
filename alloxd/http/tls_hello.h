// A TLS client's first record (its ClientHello) read before the handshake starts. A connection
// counts as a handshake in progress (HttpServerOptions::max_handshakes) only once that record has
// arrived whole: clients that open connections and stall inside their first bytes then take no
// handshake slot, and cannot push a real client's handshake (a round trip or two after a
// complete ClientHello) out of the cap. They are bounded on their own (max_handshakes of them
// waiting, the oldest reset first), by the connection cap, which closes them first, and by
// handshake_timeout. Pure function over the bytes read so far.
#pragma once

#include <cstddef>
#include <string_view>

namespace allox::extender {

// How many bytes of the connection's start the first record needs: 5 (the record header) until
// the header is in, then the header and its length. A first record that is not a TLS handshake
// record, or longer than TLS allows, needs nothing more (the handshake then refuses it): the
// size of what was read is returned.
std::size_t tls_first_record_bytes(std::string_view read);

}  // namespace allox::extender
