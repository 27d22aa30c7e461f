// Enum <-> word tables: one table of {value, word} pairs per enum, read both ways. The words
// are what flags, files and messages use.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "models/error.h"
#include "models/error_text.h"

namespace pw::models {

// The word of `value`; PW_CHECK fails when the table lacks it (a table out of date, a bug).
template <class E, size_t N>
std::string_view enum_word(const std::pair<E, std::string_view> (&names)[N], E value) {
  for (const auto& [k, n] : names)
    if (k == value) return n;
  PW_CHECK(false, "an enum value without a word in its table");
}

// The value whose word is `s`, else InputError "<where>: unknown <what> "s" (expected one of
// a, b, c)".
template <class E, size_t N>
E parse_enum_word(const std::pair<E, std::string_view> (&names)[N], std::string_view s, const std::string& where,
                  const char* what) {
  for (const auto& [k, n] : names)
    if (n == s) return k;
  std::string known;
  for (const auto& [k, n] : names) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InputError(where + ": unknown " + what + " \"" + escape_for_message(s) + "\" (expected one of " + known + ")");
}

}  // namespace pw::models
