// Bytes as hex text, for failure messages and for docs/protocol.md's examples.
#pragma once

#include <string>
#include <string_view>

namespace palisade::test {

// The first 64 bytes in hex, and the length when there are more.
std::string hex_head(std::string_view bytes);

// Every byte in hex, 16 to a line, as docs/protocol.md lays out its examples.
std::string hex_block(std::string_view bytes);

}  // namespace palisade::test
