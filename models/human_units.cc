#include "models/human_units.h"

#include <cstdio>

namespace pw::models {

std::string human_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (bytes >= 1024 && k < 5) {
    bytes /= 1024;
    ++k;
  }
  char buf[48];
  if (k == 0) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", bytes, units[k]);
  return buf;
}

}  // namespace pw::models
