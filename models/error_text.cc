#include "models/error_text.h"

#include <cstdio>

namespace pw {
namespace {

void escape_into(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

// Cuts at max_chars bytes without splitting a UTF-8 sequence, then appends "…".
std::string cut(std::string s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t n = max_chars;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s + "\xE2\x80\xA6";
}

std::string scalar(const nlohmann::json& v) {
  if (v.is_array()) return v.empty() ? "[]" : "[...]";
  if (v.is_object()) return v.empty() ? "{}" : "{...}";
  // dump() escapes control characters in strings; `replace` never throws on invalid UTF-8.
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string escape_for_message(std::string_view s, size_t max_chars) {
  std::string out;
  escape_into(out, s.substr(0, max_chars + 1));
  return cut(std::move(out), max_chars);
}

std::string describe_json_value(const nlohmann::json& v, size_t max_chars) {
  std::string out;
  if (v.is_array()) {
    out = "[";
    for (size_t i = 0; i < v.size() && out.size() <= max_chars; ++i) out += (i ? "," : "") + scalar(v[i]);
    out += "]";
  } else if (v.is_object()) {
    out = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= max_chars; ++it, first = false)
      out += (first ? "" : ",") +
             nlohmann::json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ":" +
             scalar(it.value());
    out += "}";
  } else {
    out = scalar(v);
  }
  std::string esc;
  escape_into(esc, std::string_view(out).substr(0, max_chars + 1));
  return cut(std::move(esc), max_chars);
}

std::string one_line_message(std::string_view message, size_t max_chars) {
  return escape_for_message(message, max_chars);
}

}  // namespace pw
