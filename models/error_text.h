// Error-message text: every user-supplied value that goes into a pw::InputError message passes
// through these, so a rejection is always one printable line of bounded length.
//
// Contract: escape_for_message escapes control characters (newline -> \n, tab -> \t, other
// bytes < 0x20 and 0x7f -> \xNN) and cuts the result to at most `max_chars` characters plus
// "…" when longer. describe_json_value renders a JSON value the same way without recursion:
// scalars in full (cut), arrays and objects one level deep with nested containers shown as
// [...] / {...}, so a value nested 100,000 levels deep costs O(max_chars) to describe.
// one_line_message applies escape_for_message to a whole message (the CLI's last safety net).
// All pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pw {

inline constexpr size_t kMaxValueChars = 80;

std::string escape_for_message(std::string_view s, size_t max_chars = kMaxValueChars);
std::string describe_json_value(const nlohmann::json& v, size_t max_chars = kMaxValueChars);
std::string one_line_message(std::string_view message, size_t max_chars = 1000);

}  // namespace pw
