#include "models/json_util.h"

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "models/error.h"
#include "models/error_text.h"
#include "models/input_file.h"
#include "models/output_set.h"

namespace pw {

std::string join_path(const std::string& path, std::string_view key) { return path + "/" + std::string(key); }

std::string join_path(const std::string& path, size_t index) { return path + "/" + std::to_string(index); }

std::string json_type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    default: return "value";
  }
}

static std::string where(const std::string& path) { return path.empty() ? "/" : path; }

const Json& require_object(const Json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(where(path) + ": expected an object, got " + json_type_name(j));
  return j;
}

const Json& require_field(const Json& obj, std::string_view key, const std::string& path) {
  require_object(obj, path);
  auto it = obj.find(std::string(key));
  if (it == obj.end()) throw InputError(join_path(path, key) + ": missing required field");
  return *it;
}

const Json& require_array(const Json& obj, std::string_view key, const std::string& path) {
  const Json& v = require_field(obj, key, path);
  if (!v.is_array()) throw InputError(join_path(path, key) + ": expected an array, got " + json_type_name(v));
  return v;
}

std::string get_string(const Json& obj, std::string_view key, const std::string& path) {
  const Json& v = require_field(obj, key, path);
  if (!v.is_string()) throw InputError(join_path(path, key) + ": expected a string, got " + json_type_name(v));
  return v.get<std::string>();
}

bool get_bool(const Json& obj, std::string_view key, const std::string& path) {
  const Json& v = require_field(obj, key, path);
  if (!v.is_boolean()) throw InputError(join_path(path, key) + ": expected true or false, got " + json_type_name(v));
  return v.get<bool>();
}

int64_t get_int(const Json& obj, std::string_view key, const std::string& path, int64_t min_value) {
  const Json& v = require_field(obj, key, path);
  const std::string at = join_path(path, key);
  int64_t x = 0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) throw InputError(at + ": integer too large");
    x = static_cast<int64_t>(u);
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) throw InputError(at + ": expected an integer, got a non-finite number");
    if (d != std::floor(d) || std::fabs(d) > 9.2e18)
      throw InputError(at + ": expected an integer, got " + describe_json_value(v));
    x = static_cast<int64_t>(d);
  } else {
    throw InputError(at + ": expected an integer, got " + json_type_name(v));
  }
  if (x < min_value)
    throw InputError(at + ": expected an integer >= " + std::to_string(min_value) + ", got " + std::to_string(x));
  return x;
}

double get_number(const Json& obj, std::string_view key, const std::string& path, double min_value) {
  const Json& v = require_field(obj, key, path);
  const std::string at = join_path(path, key);
  if (!v.is_number()) throw InputError(at + ": expected a number, got " + json_type_name(v));
  double d = v.get<double>();
  if (!std::isfinite(d))
    throw InputError(at + ": expected a finite number, got " + (std::isnan(d) ? "NaN" : "an infinity"));
  if (d < min_value) {
    std::ostringstream os;
    os << at << ": expected a number >= " << min_value << ", got " << d;
    throw InputError(os.str());
  }
  return d;
}

std::string get_string_or(const Json& obj, std::string_view key, const std::string& path, const std::string& fallback) {
  require_object(obj, path);
  return obj.contains(std::string(key)) ? get_string(obj, key, path) : fallback;
}

int64_t get_int_or(const Json& obj, std::string_view key, const std::string& path, int64_t fallback,
                   int64_t min_value) {
  require_object(obj, path);
  return obj.contains(std::string(key)) ? get_int(obj, key, path, min_value) : fallback;
}

double get_number_or(const Json& obj, std::string_view key, const std::string& path, double fallback,
                     double min_value) {
  require_object(obj, path);
  return obj.contains(std::string(key)) ? get_number(obj, key, path, min_value) : fallback;
}

bool get_bool_or(const Json& obj, std::string_view key, const std::string& path, bool fallback) {
  require_object(obj, path);
  return obj.contains(std::string(key)) ? get_bool(obj, key, path) : fallback;
}

std::string format_tag(std::string_view kind, int version) {
  return "pipewright." + std::string(kind) + "/" + std::to_string(version);
}

void check_format(const Json& obj, std::string_view kind, int version, const std::string& path) {
  std::string expected = format_tag(kind, version);
  std::string got = get_string(obj, "format", path);
  if (got != expected)
    throw InputError(join_path(path, "format") + ": expected \"" + expected + "\", got \"" + got + "\"");
}

std::string read_text_file(const std::string& file) { return read_input_file(file); }

void check_json_depth(std::string_view text, const std::string& name) {
  size_t depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw InputError(name + ": invalid JSON at line " + std::to_string(line) + ", byte " + std::to_string(i + 1) +
                         ": nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

Json parse_json_text(std::string_view text, const std::string& name) {
  check_json_depth(text, name);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped; report line too.
    size_t byte = e.byte == 0 ? 0 : e.byte - 1;
    size_t line = 1 + std::count(text.begin(), text.begin() + std::min(byte, text.size()), '\n');
    std::string what = byte >= text.size() ? "unexpected end of input (truncated JSON?)" : "syntax error";
    throw InputError(name + ": invalid JSON at line " + std::to_string(line) + ", byte " + std::to_string(e.byte) +
                     ": " + what);
  } catch (const Json::out_of_range& e) {
    // nlohmann reports a literal like 1e999 as out_of_range 406 "number overflow parsing '1e999'".
    std::string msg = e.what();
    size_t at = msg.find("] ");
    throw InputError(name +
                     ": invalid JSON: " + escape_for_message(at == std::string::npos ? msg : msg.substr(at + 2)) +
                     " (expected a finite number)");
  }
}

Json load_json_file(const std::string& file) {
  return parse_json_text(read_input_file(file), escape_for_message(file, 200));
}

void write_file_atomic(const std::string& file, std::string_view content) { write_output(file, content); }

void check_json_finite(const Json& j, const std::string& what) {
  // Iterative walk (no recursion on deep values); JSON dumps NaN and infinities as null.
  std::vector<std::pair<const Json*, std::string>> todo{{&j, ""}};
  while (!todo.empty()) {
    auto [v, path] = std::move(todo.back());
    todo.pop_back();
    if (v->is_number_float() && !std::isfinite(v->get<double>()))
      throw InternalError(what + ": would write a non-finite number at " + (path.empty() ? "/" : path) +
                          " (JSON would hold null there)");
    if (v->is_object())
      for (auto it = v->begin(); it != v->end(); ++it) todo.emplace_back(&*it, join_path(path, it.key()));
    else if (v->is_array())
      for (size_t i = 0; i < v->size(); ++i) todo.emplace_back(&(*v)[i], join_path(path, i));
  }
}

void save_json_file(const std::string& file, const Json& j) {
  check_json_finite(j, file);
  write_file_atomic(file, j.dump(2) + "\n");
}

}  // namespace pw
