#include "tools/notes.h"

#include <iostream>
#include <vector>

namespace pw::tools {
namespace {
std::vector<std::string>& pending() {
  static std::vector<std::string> notes;
  return notes;
}
}  // namespace

void defer_note(const std::string& line) { pending().push_back(line); }

void print_deferred_notes() {
  for (const std::string& n : pending()) std::cerr << "note: " << n << "\n";
  pending().clear();
}

}  // namespace pw::tools
