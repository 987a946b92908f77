// Identity names and CURVE keys as text (base/identity.h).
#include "base/identity.h"

#include <catch2/catch.hpp>
#include <string>

namespace palisade {
namespace {

TEST_CASE("identity: names", "[base]") {
  for (const char* good : {"alice", "lockd-1", "r.2", "svc_A", "0"}) CHECK(is_identity_name(good));
  for (const char* bad : {"", ".hidden", "-x", "a b", "a/b", "a\"b", "\xc3\xa9"}) CHECK_FALSE(is_identity_name(bad));
  CHECK(is_identity_name(std::string(64, 'a')));
  CHECK_FALSE(is_identity_name(std::string(65, 'a')));
}

TEST_CASE("identity: CURVE keys as Z85", "[base]") {
  // The key pair of ZeroMQ's CURVE specification (RFC 26) examples.
  CHECK(is_z85_key("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"));
  CHECK(is_z85_key("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"));
  CHECK(is_z85_key(std::string(40, '0')));
  CHECK_FALSE(is_z85_key(std::string(39, '0')));
  CHECK_FALSE(is_z85_key(std::string(41, '0')));
  CHECK_FALSE(is_z85_key(std::string(35, '0') + "0000~"));  // '~' is not Z85
  CHECK_FALSE(is_z85_key(std::string(35, '0') + "0000\""));
  // "%nSc0" is 2^32 - 1, the largest word; "%nSc1" is 2^32, which no 4 bytes encode.
  CHECK(is_z85_key(std::string(35, '0') + "%nSc0"));
  CHECK_FALSE(is_z85_key(std::string(35, '0') + "%nSc1"));
  CHECK_FALSE(is_z85_key(std::string(40, '#')));
}

}  // namespace
}  // namespace palisade
