// The executor's --device flag: "cpu", "cuda" (device 0) or "cuda:N".
#pragma once

#include <string>

#include "exec/tensor.h"

namespace pw::tools {

// Throws InputError("<flag>: expected cpu, cuda or cuda:N, got \"...\"").
exec::Device parse_exec_device(const std::string& text, const std::string& flag = "--device");
// Throws InputError("<flag> <device>: <why>") for a device this build or machine cannot use
// (no CUDA backend, no GPU, an insufficient driver).
void check_exec_device(const exec::Device& d, const std::string& flag = "--device");

}  // namespace pw::tools
