#include "tests/unit/protocol_doc_examples.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <sstream>

namespace palisade::test {

std::string read_protocol_doc() {
  const std::string path = std::string(PALISADE_SOURCE_DIR) + "/docs/protocol.md";
  std::ifstream in(path);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string doc_example_bytes(const std::string& doc, const std::string& marker) {
  size_t at = doc.find("<!-- " + marker + " -->");
  INFO(marker);
  REQUIRE(at != std::string::npos);
  size_t open = doc.find("```", at);
  REQUIRE(open != std::string::npos);
  size_t body = doc.find('\n', open);
  size_t close = doc.find("```", body);
  REQUIRE(close != std::string::npos);
  std::string digits;
  bool only_hex = true;
  for (char c : doc.substr(body, close - body)) {
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      only_hex = false;
    }
  }
  REQUIRE(only_hex);
  REQUIRE(digits.size() % 2 == 0);
  std::string bytes;
  for (size_t i = 0; i < digits.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

}  // namespace palisade::test
