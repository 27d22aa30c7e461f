// Sizes as people read them: "12.50 MiB" (binary prefixes, two decimals; whole bytes below
// 1 KiB). Pure; thread-safe.
#pragma once

#include <string>

namespace pw::models {

std::string human_bytes(double bytes);

}  // namespace pw::models
