// What `get -o json` does with bytes JSON strings cannot hold: UTF-8 passes,
// anything else goes as base64.
#include <catch2/catch.hpp>

#include <string>

#include "cli/base64.h"

namespace palisade::cli {
namespace {

using namespace std::string_literals;

TEST_CASE("base64: RFC 4648's test vectors, and any byte", "[cli]") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64("\0\xff\xfe"s) == "AP/+");
}

TEST_CASE("is_utf8: well-formed UTF-8 only", "[cli]") {
  CHECK(is_utf8(""));
  CHECK(is_utf8("plain ascii"));
  CHECK(is_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"));  // é € 🔒
  CHECK(is_utf8("\0"s));
  CHECK_FALSE(is_utf8("\xff"));                  // never a UTF-8 byte
  CHECK_FALSE(is_utf8("\xc3"));                  // cut short
  CHECK_FALSE(is_utf8("\xc3\x28"));              // not a continuation byte
  CHECK_FALSE(is_utf8("\xc0\xaf"));              // overlong '/'
  CHECK_FALSE(is_utf8("\xe0\x80\xaf"));          // overlong, three bytes
  CHECK_FALSE(is_utf8("\xed\xa0\x80"));          // a surrogate
  CHECK_FALSE(is_utf8("\xf4\x90\x80\x80"));      // past U+10FFFF
  CHECK_FALSE(is_utf8("\x80"));                  // a lone continuation byte
}

}  // namespace
}  // namespace palisade::cli
