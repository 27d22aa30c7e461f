// Trace file formats.
//
// - to_json / trace_from_json: {"format": "pipewright.trace/1", "source", "num_devices",
//   "events": [{"device", "op", "stage", "micro_batch", "iteration", "start_ns", "end_ns",
//   ["bytes", "dst_device", "transfer": true]}], "memory": [[device, time_ns, bytes], ...]}.
// - chrome_trace_json: Chrome trace-event JSON (Perfetto, chrome://tracing), tagged
//   "format": "pipewright.chrome-trace/1" (viewers ignore unknown top-level keys): process 0
//   "devices" has one thread (track) per device with complete ("X") events named "F3",
//   "B3", "W3", "BW3", "step", "allreduce" (3 = micro-batch); process 1 "transfers" has
//   one track per directed link "d0->d1"; memory as counter ("C") events per device.
//   Timestamps in microseconds (fractional: ns precision).
// - timeline_svg: see sim/timeline_svg.h.
#pragma once

#include <string>

#include "models/json_util.h"
#include "sim/report.h"
#include "sim/timeline_svg.h"
#include "sim/trace.h"

namespace pw::sim {

void to_json(Json& j, const Trace& t);
Trace trace_from_json(const Json& j);

Json chrome_trace_json(const Trace& t);

// Writes the Chrome trace to `trace_file` and the SVG timeline to `svg_file`, each atomically
// and only when its name is not empty (the --trace / --svg flags of simulate, run and demo).
void write_timeline_files(const Trace& t, const Report& r, const std::string& title, const std::string& trace_file,
                          const std::string& svg_file);

}  // namespace pw::sim
