// The summary `pipewright run` prints on stdout after a run: text, or with --json the run's
// report as JSON (exec/runtime/run_report.h: pipewright.run-result/1).
#pragma once

#include "exec/runtime/run_report.h"

namespace pw::tools {

void print_run_json(const exec::RunReport& report);
void print_run_text(const exec::RunReport& report);

}  // namespace pw::tools
