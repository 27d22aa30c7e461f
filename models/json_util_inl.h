// Template definitions for json_util.h.
#pragma once

#include "models/error.h"
#include "models/error_text.h"

namespace pw {

template <class T>
T parse_json_file(const std::string& file, const std::function<T(const Json&)>& parse) {
  Json j = load_json_file(file);
  try {
    return parse(j);
  } catch (const InputError& e) {
    throw InputError(escape_for_message(file, 200) + ": " + e.what());
  } catch (const Json::exception& e) { throw InputError(escape_for_message(file, 200) + ": " + e.what()); }
}

}  // namespace pw
