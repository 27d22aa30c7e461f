// Minimal XML well-formedness check (elements, quoted attributes without duplicates, entity
// references, comments, an optional <?xml ...?> prolog, one root). Returns "" when
// well-formed, else the first problem with its byte offset.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace pw::test {

inline std::string xml_problem(const std::string& s) {
  size_t i = 0;
  std::vector<std::string> stack;
  int roots = 0;
  auto err = [&](const std::string& what) { return what + " at byte " + std::to_string(i); };
  auto is_name = [](char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
  };
  if (s.compare(0, 5, "<?xml") == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return "unterminated prolog";
    i += 2;
  }
  while (i < s.size()) {
    if (s[i] == '<') {
      if (s.compare(i, 4, "<!--") == 0) {
        size_t e = s.find("-->", i);
        if (e == std::string::npos) return err("unterminated comment");
        i = e + 3;
        continue;
      }
      const bool closing = i + 1 < s.size() && s[i + 1] == '/';
      size_t j = i + (closing ? 2 : 1);
      size_t n0 = j;
      while (j < s.size() && is_name(s[j])) ++j;
      if (j == n0) return err("bad tag name");
      const std::string name = s.substr(n0, j - n0);
      if (closing) {
        if (stack.empty() || stack.back() != name) return err("mismatched </" + name + ">");
        stack.pop_back();
        while (j < s.size() && isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j >= s.size() || s[j] != '>') return err("bad closing tag");
        i = j + 1;
        continue;
      }
      if (stack.empty() && ++roots > 1) return err("second root element");
      std::set<std::string> attrs;
      bool self_closing = false;
      for (;;) {
        while (j < s.size() && isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j >= s.size()) return err("unterminated tag");
        if (s[j] == '>') {
          ++j;
          break;
        }
        if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '>') {
          self_closing = true;
          j += 2;
          break;
        }
        size_t a0 = j;
        while (j < s.size() && is_name(s[j])) ++j;
        if (j == a0) return err("bad attribute name");
        if (!attrs.insert(s.substr(a0, j - a0)).second) return err("duplicate attribute");
        if (j >= s.size() || s[j] != '=') return err("attribute without =");
        ++j;
        if (j >= s.size() || (s[j] != '"' && s[j] != '\'')) return err("unquoted attribute");
        const char q = s[j];
        size_t e = s.find(q, j + 1);
        if (e == std::string::npos) return err("unterminated attribute");
        if (s.substr(j + 1, e - j - 1).find('<') != std::string::npos) return err("'<' in attribute");
        j = e + 1;
      }
      if (!self_closing) stack.push_back(name);
      i = j;
    } else if (s[i] == '&') {
      size_t e = s.find(';', i);
      if (e == std::string::npos || e - i > 8) return err("bare '&'");
      i = e + 1;
    } else {
      if (stack.empty() && !isspace(static_cast<unsigned char>(s[i]))) return err("text outside the root");
      ++i;
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

}  // namespace pw::test
