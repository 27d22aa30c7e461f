// Sizes as people read them: "12.50 MiB" (binary prefixes, two decimals; whole bytes below
// 1 KiB), or in GiB for memory messages. Pure; thread-safe.
#pragma once

#include <string>

namespace pw::models {

std::string human_bytes(double bytes);

// Bytes in GiB with `decimals` (0 to 9) digits after the point: gib_text(5.4e8) == "0.5 GiB".
std::string gib_text(double bytes, int decimals = 1);
// The digits after the point (1 to 6) that make gib_text(a) and gib_text(b) differ, for a message
// that sets a need beside the bound it exceeds: 1, unless both round to the same text there
// ("needs 0.2 GiB, more than the 0.2 GiB ..." gives no reason to read); 6 when they never differ.
int gib_decimals_apart(double a, double b);

}  // namespace pw::models
