#include "fuzz/readers.h"

#include <string>

#include "models/cluster.h"
#include "models/device_file.h"
#include "models/error.h"
#include "models/error_text.h"
#include "models/gemm_efficiency.h"
#include "models/json_util.h"
#include "models/layer_graph.h"
#include "models/pipedream_import.h"
#include "models/profile.h"
#include "planner/plan.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_validate.h"
#include "sim/replay.h"
#include "sim/run_trace.h"
#include "sim/trace_io.h"
#include "whatif/sweep.h"

namespace pw::fuzz {
namespace {

void read_json_kind(std::string_view reader, std::string_view bytes, bool round_trip);

// What the tool does with an accepted value: it writes it back out (save_json_file uses
// dump(2)); the tool must accept what it writes (no inf/NaN/null where a number belongs).
void use(std::string_view reader, const Json& j, bool round_trip) {
  const std::string s = j.dump(2);
  (void)describe_json_value(j);
  if (!round_trip) return;
  try {
    read_json_kind(reader, s, false);
  } catch (const InputError& e) {
    throw InternalError(std::string(reader) + ": the tool rejects its own output: " + e.what());
  }
}

void read_json_kind(std::string_view reader, std::string_view bytes, bool round_trip) {
  const Json j = parse_json_text(bytes, "fuzz.json");
  (void)describe_json_value(j);
  if (reader == "model") {
    Json out;
    to_json(out, models::model_from_json(j));
    use(reader, out, round_trip);
  } else if (reader == "profile") {
    use(reader, Json(models::profile_from_json(j)), round_trip);
  } else if (reader == "cluster") {
    use(reader, Json(models::cluster_from_json(j)), round_trip);
  } else if (reader == "plan") {
    use(reader, Json(planner::plan_from_json(j)), round_trip);
  } else if (reader == "sweep") {
    const whatif::SweepSpec s = whatif::sweep_spec_from_json(j);
    // Expanding checks combinations (e.g. d_model divisible by heads): an InputError there
    // rejects the input. Done before the round trip, whose re-read only checks the reader.
    if (round_trip && s.num_points() <= 64) (void)whatif::expand_sweep(s);
    use(reader, whatif::to_json(s), round_trip);
  } else if (reader == "trace") {
    use(reader, Json(sim::trace_from_json(j)), round_trip);
  } else if (reader == "device") {
    // A `--device FILE` (pipewright.device/1): read, priced as the cost model prices with it (a
    // product off and on its measured grid, at each precision it has), written back as
    // `calibrate -o` writes it.
    const models::DeviceSpec d = models::device_from_file_json(j, "fuzz.json");
    for (const int bytes : {4, 2})
      if (models::has_gemm_curve(d, bytes == 2))
        for (const models::GemmShape& g : {models::GemmShape{1, 1, 1}, models::GemmShape{100, 3000, 70000, 3}})
          (void)models::gemm_seconds(d, g, bytes);
    (void)models::launch_seconds(d);
    use(reader, models::device_file_json(d), round_trip);
  } else if (reader == "run-trace") {
    // `simulate --replay`: read, replay (which checks the trace against its schedule).
    const sim::RunTrace rt = sim::run_trace_from_json(j);
    if (round_trip) (void)sim::replay_run_trace(rt, "fuzz.json");
    use(reader, sim::run_trace_to_json(rt), round_trip);
  } else {
    throw InternalError("unknown reader " + std::string(reader));
  }
}

}  // namespace

const std::vector<std::string_view>& reader_names() {
  static const std::vector<std::string_view> names = {"model", "profile",   "cluster",  "plan",      "sweep",
                                                      "trace", "pipedream", "schedule", "run-trace", "device"};
  return names;
}

bool read_as(std::string_view reader, std::string_view bytes) {
  try {
    if (reader == "pipedream") {
      models::PipeDreamGraph g = models::parse_pipedream_graph(bytes, "graph.txt");
      use("profile", Json(g.profile), true);  // `import -o` writes a profile
    } else if (reader == "schedule") {
      // `schedule import`: parse, validate, and (`schedule export`) write back what it read,
      // which must read back to the same schedule.
      const planner::Schedule s = planner::schedule_from_csv(bytes, "fuzz.csv");
      planner::validate_schedule(s);
      const std::string csv = planner::schedule_to_csv(s);
      try {
        if (planner::schedule_from_csv(csv, "again.csv", s.kind).device_ops.size() != s.device_ops.size())
          throw InternalError("schedule: the written CSV reads back with another device count");
      } catch (const InputError& e) {
        throw InternalError(std::string("schedule: the tool rejects its own output: ") + e.what());
      }
    } else {
      read_json_kind(reader, bytes, true);
    }
    return true;
  } catch (const InputError& e) {
    // The CLI prints this on one line: it must be printable as such.
    (void)one_line_message(e.what());
    return false;
  }
}

}  // namespace pw::fuzz
