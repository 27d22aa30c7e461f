#include "models/limits.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "models/error.h"
#include "models/error_text.h"

namespace pw::models {

std::string range_text(const Limit& l) { return "[" + std::to_string(l.min) + ", " + std::to_string(l.max) + "]"; }

int64_t check_limit(int64_t v, const Limit& l, const std::string& where) {
  if (v < l.min || v > l.max)
    throw InputError(where + ": expected an integer in " + range_text(l) + ", got " + std::to_string(v));
  return v;
}

std::string format_real(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e18) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (const int digits : {6, 15, 17}) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string range_text(const RealLimit& l) { return "[" + format_real(l.min) + ", " + format_real(l.max) + "]"; }

double check_real_limit(double v, const RealLimit& l, const std::string& where) {
  if (!(v >= l.min && v <= l.max))
    throw InputError(where + ": expected a value in " + range_text(l) + ", got " + format_real(v));
  return v;
}

double check_real_limit(double v, const Limit& l, const std::string& where) {
  return check_real_limit(v, RealLimit{static_cast<double>(l.min), static_cast<double>(l.max)}, where);
}

double get_real_limited_or(const Json& obj, std::string_view key, const std::string& path, double fallback,
                           const RealLimit& l) {
  require_object(obj, path);
  if (!obj.contains(std::string(key))) return fallback;
  const double v = get_number(obj, key, path, -std::numeric_limits<double>::max());
  return check_real_limit(v, l, join_path(path, key));
}

int64_t limited_value(const Json& v, const std::string& where, const Limit& l) {
  const auto out_of_range = [&](const std::string& got) {
    return InputError(where + ": expected an integer in " + range_text(l) + ", got " + got);
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(l.max)) throw out_of_range(std::to_string(u));
    return check_limit(static_cast<int64_t>(u), l, where);
  }
  if (v.is_number_integer()) return check_limit(v.get<int64_t>(), l, where);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw InputError(where + ": expected an integer, got a non-finite number");
    if (d != std::floor(d)) throw InputError(where + ": expected an integer, got " + describe_json_value(v));
    if (d < static_cast<double>(l.min) || d > static_cast<double>(l.max)) throw out_of_range(describe_json_value(v));
    return check_limit(static_cast<int64_t>(d), l, where);
  }
  throw InputError(where + ": expected an integer, got " + json_type_name(v));
}

int64_t get_limited(const Json& obj, std::string_view key, const std::string& path, const Limit& l) {
  return limited_value(require_field(obj, key, path), join_path(path, key), l);
}

int64_t get_limited_or(const Json& obj, std::string_view key, const std::string& path, int64_t fallback,
                       const Limit& l) {
  require_object(obj, path);
  return obj.contains(std::string(key)) ? get_limited(obj, key, path, l) : fallback;
}

int get_limited_int(const Json& obj, std::string_view key, const std::string& path, const Limit& l) {
  PW_CHECK(l.min >= INT_MIN && l.max <= INT_MAX, "get_limited_int: limit beyond int");
  return static_cast<int>(get_limited(obj, key, path, l));
}

int get_limited_int_or(const Json& obj, std::string_view key, const std::string& path, int fallback, const Limit& l) {
  PW_CHECK(l.min >= INT_MIN && l.max <= INT_MAX, "get_limited_int_or: limit beyond int");
  return static_cast<int>(get_limited_or(obj, key, path, fallback, l));
}

const Limit* layer_attribute_limit(std::string_view attribute) {
  struct Entry {
    std::string_view name;
    const Limit* limit;
  };
  static constexpr Entry kTable[] = {{"seq", &limits::kSeq},     {"d_model", &limits::kDModel},
                                     {"heads", &limits::kHeads}, {"ffn", &limits::kFfn},
                                     {"vocab", &limits::kVocab}, {"classes", &limits::kClasses},
                                     {"in_h", &limits::kImage},  {"in_w", &limits::kImage}};
  for (const Entry& e : kTable)
    if (e.name == attribute) return e.limit;
  return nullptr;
}

void check_schedule_size(int64_t virtual_stages, int64_t micro_batches, const std::string& where) {
  if (virtual_stages * micro_batches * 3 > limits::kMaxScheduleOps)
    throw InputError(where + ": " + std::to_string(virtual_stages) + " stages x " + std::to_string(micro_batches) +
                     " micro-batches: more than " + std::to_string(limits::kMaxScheduleOps) + " ops in one schedule");
}

}  // namespace pw::models
