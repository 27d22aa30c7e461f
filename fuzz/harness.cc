// libFuzzer entry point: one executable per reader (fuzz/CMakeLists.txt compiles this file once
// per reader with PW_FUZZ_READER set to its name). Rejections (pw::InputError) are fine;
// anything else is a finding: an escaping exception aborts, sanitizers report the rest.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/readers.h"

#ifndef PW_FUZZ_READER
#error "PW_FUZZ_READER must name a reader of fuzz/readers.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pw::fuzz::read_as(PW_FUZZ_READER, std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
