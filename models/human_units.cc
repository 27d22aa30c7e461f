#include "models/human_units.h"

#include <algorithm>
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

std::string gib_text(double bytes, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f GiB", std::clamp(decimals, 0, 9), bytes / 1073741824.0);
  return buf;
}

int gib_decimals_apart(double a, double b) {
  int d = 1;
  while (d < 6 && gib_text(a, d) == gib_text(b, d)) ++d;
  return d;
}

}  // namespace pw::models
