// Checked JSON field access and JSON file I/O.
//
// Every reader takes the JSON path of the object it reads (e.g. "/layers/3") and throws
// pw::InputError("<path>/<key>: expected <what>, got <what it found>") on a missing field,
// a wrong type, a negative or non-finite number. File-level functions prefix the file name.
// Numbers: NaN and infinities are rejected everywhere (JSON cannot hold them, but a parser
// extension or an overflowing literal could produce them).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pw {

using Json = nlohmann::json;

// Joins a JSON pointer-like path with a key or index: join_path("/layers", 3) == "/layers/3".
std::string join_path(const std::string& path, std::string_view key);
std::string join_path(const std::string& path, size_t index);

const Json& require_field(const Json& obj, std::string_view key, const std::string& path);
const Json& require_object(const Json& j, const std::string& path);
const Json& require_array(const Json& obj, std::string_view key, const std::string& path);
std::string get_string(const Json& obj, std::string_view key, const std::string& path);
bool get_bool(const Json& obj, std::string_view key, const std::string& path);
// Integer in [min_value, +inf). A float with a fractional part is a type error.
int64_t get_int(const Json& obj, std::string_view key, const std::string& path, int64_t min_value = 0);
// Finite number >= min_value.
double get_number(const Json& obj, std::string_view key, const std::string& path, double min_value = 0.0);

// Optional variants: the default when the key is absent, checked like the above when present.
std::string get_string_or(const Json& obj, std::string_view key, const std::string& path, const std::string& fallback);
int64_t get_int_or(const Json& obj, std::string_view key, const std::string& path, int64_t fallback,
                   int64_t min_value = 0);
double get_number_or(const Json& obj, std::string_view key, const std::string& path, double fallback,
                     double min_value = 0.0);
bool get_bool_or(const Json& obj, std::string_view key, const std::string& path, bool fallback);

// Checks obj["format"] == "pipewright.<kind>/<version>".
void check_format(const Json& obj, std::string_view kind, int version, const std::string& path);
std::string format_tag(std::string_view kind, int version);

// Short description of a JSON value's type for messages ("string", "number", ...).
std::string json_type_name(const Json& j);

// Reads a whole text file through read_input_file (models/input_file.h): a regular,
// non-empty file of at most 256 MiB, else InputError("<file>: is a directory" / ...).
std::string read_text_file(const std::string& file);
// JSON nested deeper than this is rejected before parsing (printing, comparing and copying a
// JSON value recurse, so depth must be bounded where the text enters).
inline constexpr size_t kMaxJsonDepth = 1000;
// Throws InputError("<name>: invalid JSON at line L, byte B: nested more than 1000 levels deep")
// when brackets outside strings nest deeper than kMaxJsonDepth. Linear, no recursion.
void check_json_depth(std::string_view text, const std::string& name);
// Parses JSON text: depth-checked, then nlohmann. Errors start with `name` and give the line
// and byte offset of a syntax error.
Json parse_json_text(std::string_view text, const std::string& name);
// Parses a JSON file (read_input_file + parse_json_text). Errors name the file.
Json load_json_file(const std::string& file);
// Runs `parse` on a loaded file, prefixing any InputError it throws with the file name.
template <class T>
T parse_json_file(const std::string& file, const std::function<T(const Json&)>& parse);

// Writes `content` to `file` through models/output_set.h (write_output): into the current
// OutputSet when it holds `file`, else at once, atomically (a temporary beside it, then rename).
// Only regular files are replaced; on failure no partial file is left. "-" is standard output.
void write_file_atomic(const std::string& file, std::string_view content);
// Throws InternalError("<what>: would write a non-finite number at <path>") when `j` holds a
// NaN or an infinity anywhere (dump() would write null: a file the readers reject). Iterative.
void check_json_finite(const Json& j, const std::string& what);
// Pretty-printed JSON (2-space indent, trailing newline) written atomically, after
// check_json_finite: the tool never writes a JSON file that it would itself reject.
void save_json_file(const std::string& file, const Json& j);

}  // namespace pw

#include "models/json_util_inl.h"
