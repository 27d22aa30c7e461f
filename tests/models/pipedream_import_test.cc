#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include "models/error.h"
#include "models/limits.h"
#include "models/pipedream_import.h"
#include "models/profile.h"

using namespace pw::models;

namespace {

const std::string kDir = std::string(PW_PIPEDREAM_DIR);

struct Expected {
  const char* file;
  int nodes, edges;
  int64_t fwd_ns, bwd_ns, params;  // -1: not stated in the README table
};

// The README table: node/edge counts, summed fwd/bwd ms (non-Input nodes), parameter bytes.
const Expected kTable[] = {
    {"alexnet/graph.txt", 23, 23, 44801000, 40520000, 244403360},
    {"vgg16/graph.txt", 41, 41, 233902000, 438633000, 553430176},
    {"resnet18/graph.txt", 71, 79, 107446000, 152296000, 46758048},
    {"resnet18/graph_copy.txt", 71, 79, -1, -1, -1},
    {"squeezenet1_0/graph.txt", 68, 76, 113247000, 172119000, 4993696},
    {"resnet50/graph.txt", 177, 193, 182488000, 260931000, 102228128},
    {"resnext50/graph.txt", 177, 193, 221803000, 368990000, 100115616},
    {"resnet101/graph.txt", 347, 380, 197306000, 213786000, 178196640},
    {"resnext101/graph.txt", 347, 380, 239122000, 318310000, 176710816},
    {"densenet121/graph.txt", 429, 487, 177404000, 148751000, 31915424},
    {"inception_v3/graph.txt", 326, 362, 289269000, 399769000, 108645056},
    {"nasnetamobile/graph.txt", 921, 1078, 322921000, 261363000, 34343816},
    {"nasnetalarge/graph.txt", 1251, 1468, 409087000, 249210000, 368958360},
    {"gnmt/graph.txt", 48, 58, 33533000, 55883000, 775063808},
    {"gnmt_large/graph.txt", 96, 122, 182563000, 337890000, 1110870272},
    {"inception_v3/graph_compressed.txt", 92, 128, 289269000, 399769000, -1},
    {"nasnetamobile/graph_compressed.txt", 290, 447, 322921000, 261363000, -1},
    {"nasnetalarge/graph_compressed.txt", 388, 605, 409087000, 249210000, -1},
    {"_test_graphs/vgg16_partitioned.txt", 41, 41, -1, -1, -1},
    {"_test_graphs/resnet50_partitioned.txt", 177, 193, -1, -1, -1},
    {"_test_graphs/resnext50_generated.txt", 177, 193, -1, -1, -1},
    {"_test_graphs/test.txt", 6, 6, 0, 0, 0},
    {"_test_graphs/test2.txt", 5, 6, 0, 0, 0},
};

void check_topological(const Profile& p) {
  for (const auto& e : p.edges) CHECK(e.from < e.to);
}

}  // namespace

TEST_CASE("pipedream import: every file of the README table matches its counts and totals") {
  for (const auto& e : kTable) {
    CAPTURE(e.file);
    PipeDreamGraph g = read_pipedream_graph(kDir + "/" + e.file);
    CHECK(g.profile.source == "pipedream");
    CHECK(static_cast<int>(g.profile.layers.size()) == e.nodes);
    CHECK(static_cast<int>(g.profile.edges.size()) == e.edges);
    if (e.fwd_ns >= 0) CHECK(g.profile.total_forward_ns() == e.fwd_ns);
    if (e.bwd_ns >= 0) CHECK(g.profile.total_backward_ns() == e.bwd_ns);
    if (e.params >= 0) CHECK(g.profile.total_parameter_bytes() == e.params);
    check_topological(g.profile);
    for (const auto& l : g.profile.layers) {
      CHECK(l.backward_weight_ns == 0);
      CHECK(l.stash_bytes == l.output_bytes);
    }
  }
}

TEST_CASE("pipedream import: every .txt under the shared profiles reads, optimizer outputs carry stage ids") {
  int files = 0, outputs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kDir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".txt") continue;
    const std::string file = entry.path().string();
    CAPTURE(file);
    PipeDreamGraph g = read_pipedream_graph(file);
    ++files;
    CHECK(g.stage_id.size() == g.profile.layers.size());
    const std::string name = entry.path().filename().string();
    if (name.rfind("gpus=", 0) == 0) {
      ++outputs;
      CHECK(g.has_stage_ids);
      for (int s : g.stage_id) CHECK(s >= 0);
      // The optimizer drops only __getitem__ sinks: compute totals equal the source profile's.
      const std::string model = entry.path().parent_path().filename().string();
      const std::string src =
          model.substr(0, model.find("_n") < model.find("_h") ? model.find("_n") : model.find("_h"));
      const std::string base = src == "readme_vgg16" ? "vgg16" : src;
      Profile orig = import_pipedream_graph(kDir + "/" + base + "/graph.txt");
      CHECK(g.profile.total_forward_ns() == orig.total_forward_ns());
      CHECK(g.profile.total_parameter_bytes() == orig.total_parameter_bytes());
    }
  }
  CHECK(files == 55);
  CHECK(outputs == 32);
}

TEST_CASE("pipedream import: exact decimal conversion, summed list activations, data-loading inputs") {
  CHECK(parse_ms_to_ns("233.902", "x") == 233902000);
  CHECK(parse_ms_to_ns("0.000", "x") == 0);
  CHECK(parse_ms_to_ns("7", "x") == 7000000);
  CHECK(parse_ms_to_ns("0.000001", "x") == 1);
  CHECK(parse_bytes("6291456.0", "x") == 6291456);
  CHECK(parse_bytes("4.000", "x") == 4);
  CHECK_THROWS_AS(parse_ms_to_ns("1e-3", "x"), pw::InputError);
  CHECK_THROWS_AS(parse_ms_to_ns("-1.0", "x"), pw::InputError);
  CHECK_THROWS_AS(parse_ms_to_ns("0.0000001", "x"), pw::InputError);
  CHECK_THROWS_AS(parse_bytes("1.5", "x"), pw::InputError);
  CHECK_THROWS_AS(parse_bytes("nan", "x"), pw::InputError);

  const std::string text =
      "node2 -- Linear(a, b) -- forward_compute_time=1.500, backward_compute_time=2.250, "
      "activation_size=[8.0; 16.0; 4.0], parameter_size=40.000\n"
      "node1 -- Input -- forward_compute_time=9.000, backward_compute_time=0.000, "
      "activation_size=2408448.000, parameter_size=0.000 -- stage_id=0\n"
      "\tnode1 -- node2";
  PipeDreamGraph g = parse_pipedream_graph(text, "dir/graph.txt");
  REQUIRE(g.profile.layers.size() == 2);
  CHECK(g.profile.model == "dir");
  CHECK(g.profile.layers[0].name == "node1");  // topological order puts the source first
  CHECK(g.profile.layers[0].is_data_loading);
  CHECK(g.profile.layers[0].kind == "Input");
  CHECK(g.profile.micro_batch == 4);  // 2408448 / (4*3*224*224)
  CHECK(g.profile.layers[1].output_bytes == 28);
  CHECK(g.profile.layers[1].forward_ns == 1500000);
  CHECK(g.profile.layers[1].backward_input_ns == 2250000);
  CHECK(g.profile.layers[1].parameter_bytes == 40);
  CHECK(g.profile.total_forward_ns() == 1500000);  // Input loading time is not compute
  CHECK(g.stage_id == std::vector<int>{0, -1});
  CHECK(g.line == std::vector<int>{2, 1});
  CHECK(g.has_stage_ids);
}

TEST_CASE("pipedream import: bad input names file and line") {
  const std::string ok =
      "a -- X -- forward_compute_time=1.0, backward_compute_time=1.0, activation_size=4.0, parameter_size=0.0\n";
  auto msg = [](const std::string& text) {
    try {
      parse_pipedream_graph(text, "g.txt");
    } catch (const pw::InputError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  CHECK(msg("a -- X -- forward_compute_time=1.0, backward_compute_time=1.0, activation_size=4.0\n")
            .rfind("g.txt:1: expected 4 metrics", 0) == 0);
  CHECK(msg("a -- X\n").rfind("g.txt:1: expected \"<id> -- <description>", 0) == 0);
  CHECK(
      msg(ok + "b -- X -- forward_compute_time=x, backward_compute_time=1.0, activation_size=4.0, parameter_size=0.0\n")
          .rfind("g.txt:2: forward_compute_time: expected milliseconds", 0) == 0);
  CHECK(msg(ok + "\ta -- zz\n").rfind("g.txt:2: edge to unknown node \"zz\"", 0) == 0);
  CHECK(msg(ok + ok).rfind("g.txt:2: duplicate node \"a\"", 0) == 0);
  const std::string b =
      "b -- Y -- forward_compute_time=1.0, backward_compute_time=1.0, activation_size=4.0, parameter_size=0.0\n";
  CHECK(msg(ok + b + "\ta -- b\n\tb -- a\n") == "g.txt:3: edge a -- b closes a cycle (expected a DAG)");
  CHECK(msg(ok + b + "\ta -- b\n\ta -- b\n").rfind("g.txt:4: duplicate edge", 0) == 0);
  CHECK(msg("").rfind("g.txt: no node lines", 0) == 0);
  CHECK(msg(ok + "a2 -- X -- forward_compute_time=1.0, backward_compute_time=1.0, activation_size=4.0, "
                 "parameter_size=0.0 -- stage=1\n")
            .rfind("g.txt:2: expected \"stage_id=", 0) == 0);
  CHECK_THROWS_WITH_AS(read_pipedream_graph("/nonexistent/graph.txt"), doctest::Contains("/nonexistent/graph.txt"),
                       pw::InputError);
}

// What the importer accepts it writes as a profile (`import -o`), which every reader must take
// back: a value past the profile's limits is refused here, with the file, line and field.
TEST_CASE("pipedream import: values past a profile's limits are refused, the largest accepted ones read back") {
  auto line = [](const std::string& fwd, const std::string& act, const std::string& tail = "") {
    return "a -- Input -- forward_compute_time=" + fwd + ", backward_compute_time=1.0, activation_size=" + act +
           ", parameter_size=0.0" + tail + "\n";
  };
  auto msg = [](const std::string& text) {
    try {
      parse_pipedream_graph(text, "g.txt");
    } catch (const pw::InputError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  // Durations: up to 1e9 ms (limits::kDurationNs); past it, and far past int64 ns, refused.
  CHECK(parse_ms_to_ns("1000000000.0", "x") == limits::kDurationNs.max);
  CHECK(msg(line("1000000000.000001", "4.0")) ==
        "g.txt:1: forward_compute_time: expected at most 1000000000 ms, got \"1000000000.000001\"");
  CHECK(msg(line("9223372036854.999999", "4.0")).rfind("g.txt:1: forward_compute_time: expected at most", 0) == 0);
  // Sizes: up to 1e18 bytes, for one value and for the sum of a list (which would leave int64).
  CHECK(parse_bytes("1000000000000000000", "x") == limits::kBytes.max);
  CHECK(msg(line("1.0", "1000000000000000001.0")).rfind("g.txt:1: activation_size: expected at most", 0) == 0);
  CHECK(msg(line("1.0", "[900000000000000000.0; 900000000000000000.0]"))
            .rfind("g.txt:1: activation_size: expected at most 1000000000000000000 bytes", 0) == 0);
  CHECK(msg(line("1.0", "[9000000000000000000.0; 9000000000000000000.0]"))
            .rfind("g.txt:1: activation_size: expected at most", 0) == 0);
  // Stage ids: 0 .. kStages.max - 1, never narrowed to int with wrap-around (2^32 + 1 is not 1).
  CHECK(msg(line("1.0", "4.0", " -- stage_id=65535")) == "no error");
  CHECK(msg(line("1.0", "4.0", " -- stage_id=65536")).rfind("g.txt:1: stage_id 65536 is past the last stage", 0) == 0);
  CHECK(msg(line("1.0", "4.0", " -- stage_id=4294967297")).rfind("g.txt:1: stage_id 4294967297", 0) == 0);

  // An input so large that the inferred batch would pass kMicroBatchSize is no batch: micro_batch 1.
  const int64_t per_sample = 4 * 3 * 224 * 224;
  const int64_t big = (limits::kMicroBatchSize.max + 1) * per_sample;
  Profile p = parse_pipedream_graph(line("1000000000.0", std::to_string(big) + ".0"), "g.txt").profile;
  CHECK(infer_pipedream_batch(p) == 0);
  CHECK(p.micro_batch == 1);
  CHECK(p.layers[0].forward_ns == limits::kDurationNs.max);
  const Profile back = profile_from_json(Json(p));  // the largest accepted values read back
  CHECK(back.layers[0].output_bytes == big);
  CHECK(back.layers[0].forward_ns == limits::kDurationNs.max);
  p = parse_pipedream_graph(line("1.0", std::to_string(limits::kMicroBatchSize.max * per_sample) + ".0"), "g.txt")
          .profile;
  CHECK(p.micro_batch == limits::kMicroBatchSize.max);
}
