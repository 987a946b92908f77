// docs/protocol.md's hex examples, read back so that tests can compare them with
// what the encoders write. Each example is a code block after a marker line
// "<!-- MARKER -->": "example NAME" for the replica's, "lock-example NAME" for
// the lock group's.
#pragma once

#include <string>

namespace palisade::test {

// The whole of docs/protocol.md.
std::string read_protocol_doc();

// The bytes of the code block after "<!-- `marker` -->", written as hex digit
// pairs separated by any whitespace; fails the test when there is no such block
// or it holds anything else.
std::string doc_example_bytes(const std::string& doc, const std::string& marker);

}  // namespace palisade::test
