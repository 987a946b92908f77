// How Catch2 prints palisade types in failed checks.
#pragma once

#include <catch2/catch.hpp>

#include "palisade/status.h"

namespace Catch {
template <>
struct StringMaker<palisade::Code> {
  static std::string convert(palisade::Code code) { return std::string(palisade::code_name(code)); }
};
}  // namespace Catch
