#include "models/human_units.h"

#include <doctest/doctest.h>

using pw::models::gib_decimals_apart;
using pw::models::gib_text;
using pw::models::human_bytes;

TEST_CASE("human_bytes: whole bytes below 1 KiB, two decimals above") {
  CHECK(human_bytes(512) == "512 B");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(3.0 * 1024 * 1024 * 1024) == "3.00 GiB");
}

TEST_CASE("gib_text: GiB with the digits asked for") {
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(gib_text(0.5 * gib) == "0.5 GiB");
  CHECK(gib_text(0.25 * gib, 2) == "0.25 GiB");
  CHECK(gib_text(2 * gib, 0) == "2 GiB");
}

// A refusal sets the need beside the bound it exceeds; both must read differently.
TEST_CASE("gib_decimals_apart: one digit unless need and bound read the same there") {
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(gib_decimals_apart(0.9 * gib, 0.5 * gib) == 1);
  CHECK(gib_decimals_apart(0.23 * gib, 0.21 * gib) == 2);  // "0.2 GiB" twice at one digit
  CHECK(gib_text(0.23 * gib, 2) != gib_text(0.21 * gib, 2));
  CHECK(gib_decimals_apart(0.2301 * gib, 0.2302 * gib) == 4);
  CHECK(gib_decimals_apart(gib, gib) == 6);  // equal: the most digits, never a loop
  for (double need : {0.031, 0.2049, 1.00001, 79.25}) {
    const double have = need * 0.999;
    const int d = gib_decimals_apart(need * gib, have * gib);
    CAPTURE(need);
    CHECK(gib_text(need * gib, d) != gib_text(have * gib, d));
  }
}
