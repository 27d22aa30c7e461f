// Checkpoints (exec/checkpoint.h) through the trainer and the pipeline driver: a stopped and
// resumed run equals the uninterrupted one bitwise; checkpoints of another run, truncated or
// corrupt files are rejected with one line; a NaN stops the run and keeps the last good one.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "exec/numerics.h"
#include "exec/runtime/checkpoint.h"
#include "exec/runtime/run_pipeline.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = fs::temp_directory_path() / ("pw_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

models::Model mlp(int64_t width = 16) {
  models::ZooOptions z;
  z.depth = 3;
  z.width = width;
  z.batch = 8;
  return models::build_zoo_model("mlp", z);
}

models::Model gpt() {
  models::ZooOptions z;
  z.layers = 2;
  z.d_model = 16;
  z.heads = 2;
  z.ffn = 32;
  z.seq = 8;
  z.vocab = 64;
  z.batch = 8;
  return models::build_zoo_model("gpt", z);
}

TrainOptions train_options(OptimizerKind kind, int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 8;
  o.micro_batch = 4;
  o.optimizer.kind = kind;
  o.optimizer.lr = kind == OptimizerKind::adam ? 3e-3 : 0.05;
  return o;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) { return e.what(); }
  return "";
}

TEST_CASE("train: stop after step 13, resume: the losses and final checkpoint equal the uninterrupted run's") {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    for (const models::Model& model : {mlp(), gpt()}) {
      CAPTURE(model.name());
      CAPTURE(static_cast<int>(kind));
      TempDir dir;
      TrainOptions o = train_options(kind, 30);
      o.checkpoint_dir = dir.sub("full");
      o.checkpoint_every = 10;
      const TrainResult full = train(model, o);
      REQUIRE(full.losses.size() == 30);
      CHECK(full.checkpoint_step == 30);
      CHECK(checkpoint_step(dir.sub("full")) == 30);

      o.checkpoint_dir = dir.sub("part");
      int calls = 0;
      o.stop_requested = [&calls] { return ++calls == 13; };
      const TrainResult part = train(model, o);
      CHECK(part.stopped);
      REQUIRE(part.losses.size() == 13);
      CHECK(part.checkpoint_step == 13);
      for (size_t i = 0; i < 13; ++i) CHECK(part.losses[i] == full.losses[i]);

      o.stop_requested = {};
      o.resume_dir = dir.sub("part");
      const TrainResult rest = train(model, o);
      CHECK(rest.first_step == 13);
      REQUIRE(rest.losses.size() == 17);
      for (size_t i = 0; i < 17; ++i) CHECK(rest.losses[i] == full.losses[13 + i]);  // bitwise
      CHECK(entries(dir.sub("part")) == entries(dir.sub("full")));
      CHECK(slurp(dir.sub("part/stage-0.step-30.bin")) == slurp(dir.sub("full/stage-0.step-30.bin")));
    }
  }
}

PipelineRunOptions run_options(int steps) {
  PipelineRunOptions o;
  o.steps = steps;
  o.threads_per_worker = 1;
  o.optimizer.kind = OptimizerKind::adam;
  o.optimizer.lr = 3e-3;
  return o;
}

TEST_CASE("run_pipeline: 2 stages stopped after step 7 and resumed equal the uninterrupted run bitwise") {
  for (planner::ScheduleKind kind : {planner::ScheduleKind::one_f_one_b, planner::ScheduleKind::pipedream_async}) {
    CAPTURE(planner::to_string(kind));
    TempDir dir;
    const models::Model model = gpt();
    const planner::Plan plan = even_plan(model, 2, 4, 2, kind, false);
    PipelineRunOptions o = run_options(16);
    o.warmup_steps = 2;
    o.checkpoint_dir = dir.sub("full");
    o.checkpoint_every = 5;
    const PipelineRunResult full = run_pipeline(model, plan, o);
    REQUIRE(full.losses.size() == 16);
    CHECK(checkpoint_step(dir.sub("full")) == 18);

    o.checkpoint_dir = dir.sub("part");
    int calls = 0;
    o.stop_requested = [&calls] { return ++calls == 7; };
    const PipelineRunResult part = run_pipeline(model, plan, o);
    CHECK(part.stopped);
    CHECK(part.iterations_run == 7);
    CHECK(part.checkpoint_step == 7);
    REQUIRE(part.losses.size() == 5);  // 2 warm-up steps are not reported

    o.stop_requested = {};
    o.resume_dir = dir.sub("part");
    const PipelineRunResult rest = run_pipeline(model, plan, o);
    CHECK(rest.first_step == 7);
    REQUIRE(rest.losses.size() == 11);
    for (size_t i = 0; i < 11; ++i) CHECK(rest.losses[i] == full.losses[5 + i]);  // bitwise
    for (int s = 0; s < 2; ++s) {
      const std::string f = "/stage-" + std::to_string(s) + ".step-18.bin";
      CHECK(slurp(dir.sub("part") + f) == slurp(dir.sub("full") + f));
    }
  }
}

TEST_CASE("resume: a checkpoint of another model, plan or options is one line naming the difference") {
  TempDir dir;
  TrainOptions o = train_options(OptimizerKind::adam, 3);
  o.checkpoint_dir = dir.sub("c");
  train(mlp(16), o);
  o.checkpoint_dir.clear();
  o.resume_dir = dir.sub("c");
  o.steps = 5;
  std::string m = message_of([&] { train(mlp(32), o); });
  CHECK(m.find("--resume " + dir.sub("c")) == 0);
  CHECK(m.find("model/hash") != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
  TrainOptions other = o;
  other.micro_batch = 2;
  m = message_of([&] { train(mlp(16), other); });
  CHECK(m.find("layout/micro_batch is 4, this run's is 2") != std::string::npos);
  other = o;
  other.optimizer.kind = OptimizerKind::sgd;
  m = message_of([&] { train(mlp(16), other); });
  CHECK(m.find("options/optimizer is \"adam\", this run's is \"sgd\"") != std::string::npos);
  other = o;
  other.steps = 3;
  CHECK(message_of([&] { train(mlp(16), other); }).find("leaves nothing to run") != std::string::npos);

  // A pipeline checkpoint with another stage split.
  const models::Model model = gpt();
  PipelineRunOptions ro = run_options(2);
  ro.checkpoint_dir = dir.sub("p");
  run_pipeline(model, even_plan(model, 2, 2, 4, planner::ScheduleKind::gpipe, false), ro);
  ro.checkpoint_dir.clear();
  ro.resume_dir = dir.sub("p");
  ro.steps = 4;
  planner::Plan three = even_plan(model, 3, 2, 4, planner::ScheduleKind::gpipe, false);
  m = message_of([&] { run_pipeline(model, three, ro); });
  CHECK(m.find("layout/stages is [[0,") != std::string::npos);
  // The single-device checkpoint is not a pipeline's.
  ro.resume_dir = dir.sub("c");
  m = message_of([&] { run_pipeline(mlp(16), even_plan(mlp(16), 2, 2, 4, planner::ScheduleKind::gpipe, false), ro); });
  CHECK(m.find("layout/") != std::string::npos);
  CHECK(message_of([&] {
          ro.resume_dir = dir.sub("none");
          run_pipeline(model, three, ro);
        }).find("not a directory") != std::string::npos);
}

TEST_CASE("resume: a truncated, padded or corrupt stage file and a torn manifest are rejected") {
  TempDir dir;
  TrainOptions o = train_options(OptimizerKind::sgd, 4);
  o.checkpoint_dir = dir.sub("c");
  train(mlp(), o);
  const std::string blob = dir.sub("c/stage-0.step-4.bin");
  const std::string good = slurp(blob);
  o.checkpoint_dir.clear();
  o.resume_dir = dir.sub("c");
  o.steps = 6;
  auto rewrite = [&](const std::string& content) { std::ofstream(blob, std::ios::binary) << content; };

  rewrite(good.substr(0, good.size() - 100));
  std::string m = message_of([&] { train(mlp(), o); });
  CHECK(m.find("truncated") != std::string::npos);
  CHECK(m.find("stage-0.step-4.bin") != std::string::npos);
  rewrite(good + "x");
  CHECK(message_of([&] { train(mlp(), o); }).find("wrong size") != std::string::npos);
  std::string flipped = good;
  flipped[100] ^= 0x10;  // inside the first weight tensor's values
  rewrite(flipped);
  CHECK(message_of([&] { train(mlp(), o); }).find("checksum mismatch") != std::string::npos);
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  rewrite(bad_magic);
  CHECK(message_of([&] { train(mlp(), o); }).find("not a pipewright checkpoint") != std::string::npos);
  rewrite(good);
  CHECK(train(mlp(), o).first_step == 4);

  const std::string manifest = slurp(dir.sub("c/manifest.json"));
  std::ofstream(dir.sub("c/manifest.json"), std::ios::binary) << manifest.substr(0, manifest.size() / 2);
  m = message_of([&] { train(mlp(), o); });
  CHECK(m.find("manifest.json") != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
  fs::remove(dir.sub("c/manifest.json"));
  CHECK(message_of([&] { train(mlp(), o); }).find("no checkpoint there") != std::string::npos);
  CHECK(checkpoint_step(dir.sub("c")) == -1);
}

TEST_CASE("load: a non-finite value under a valid checksum and an edited rng_state are refused") {
  TempDir dir;
  const std::string c = dir.sub("c");
  const Json identity = {{"run", "finite"}};
  Tensor w = Tensor::zeros({2, 3}), m = Tensor::zeros({4});
  w.data()[4] = 0.5f;
  StageState st;
  st.tensors = {{"fc0/0", &w}, {"opt/m", &m}};
  const DataState data{0x1234abcdULL, 7};
  auto load = [&] {
    const CheckpointInfo info = open_checkpoint(c, identity, 1);
    Tensor w2 = Tensor::zeros({2, 3}), m2 = Tensor::zeros({4});
    StageState into;
    into.tensors = {{"fc0/0", &w2}, {"opt/m", &m2}};
    load_stage(c, info, 0, into);
    CHECK(w2.data()[4] == 0.5f);
    CHECK(info.data.rng == data.rng);
    CHECK(info.data.batches == 7);
  };
  save_checkpoint(c, identity, 3, data, {st});
  load();  // finite: loads

  // An Adam moment overflowed to infinity: saved with a valid checksum, refused on load.
  m.data()[2] = std::numeric_limits<float>::infinity();
  save_checkpoint(c, identity, 3, data, {st});
  std::string msg = message_of(load);
  CHECK(msg.find("stage-0.step-3.bin: tensor \"opt/m\" holds an infinity at element 2") != std::string::npos);
  m.data()[2] = std::numeric_limits<float>::quiet_NaN();
  save_checkpoint(c, identity, 3, data, {st});
  CHECK(message_of(load).find("tensor \"opt/m\" holds NaN at element 2") != std::string::npos);

  // The data loader's position edited in the manifest: refused before any stage is read.
  m.data()[2] = 0;
  save_checkpoint(c, identity, 3, data, {st});
  const std::string manifest = slurp(c + "/manifest.json");
  Json j = Json::parse(manifest);
  j["data"]["rng_state"] = "000000001234abce";
  std::ofstream(c + "/manifest.json", std::ios::binary | std::ios::trunc) << j.dump(2);
  msg = message_of([&] { open_checkpoint(c, identity, 1); });
  CHECK(msg.find("/data: rng_state and batches do not match their checksum") != std::string::npos);
  j = Json::parse(manifest);
  j["data"]["batches"] = 8;
  std::ofstream(c + "/manifest.json", std::ios::binary | std::ios::trunc) << j.dump(2);
  CHECK(message_of([&] { open_checkpoint(c, identity, 1); }).find("/data: rng_state and batches") != std::string::npos);
  j = Json::parse(manifest);
  j["data"].erase("fnv1a64");
  std::ofstream(c + "/manifest.json", std::ios::binary | std::ios::trunc) << j.dump(2);
  CHECK(message_of([&] { open_checkpoint(c, identity, 1); }).find("/data/fnv1a64: missing") != std::string::npos);
  std::ofstream(c + "/manifest.json", std::ios::binary | std::ios::trunc) << manifest;
  load();
}

TEST_CASE("save_checkpoint: the manifest names the new files, older stage files and stray temporaries go") {
  TempDir dir;
  const std::string c = dir.sub("c");
  fs::create_directories(c);
  std::ofstream(c + "/.stage-0.step-9.bin.tmpABCDEF") << "partial";
  std::ofstream(c + "/notes.txt") << "kept";
  TrainOptions o = train_options(OptimizerKind::adam, 6);
  o.checkpoint_dir = c;
  o.checkpoint_every = 2;
  train(mlp(), o);
  CHECK(entries(c) == std::vector<std::string>{"manifest.json", "notes.txt", "stage-0.step-6.bin"});
  const Json m = load_json_file(c + "/manifest.json");
  CHECK(m.at("format") == "pipewright.checkpoint/1");
  CHECK(m.at("step") == 6);
  CHECK(m.at("data").at("batches") == 12);  // 6 steps of 2 micro-batches
  CHECK(m.at("identity").at("model").at("name") == "mlp-d3-w16");
  CHECK(m.at("stages").at(0).at("file") == "stage-0.step-6.bin");
}

TEST_CASE("all_finite finds a NaN or an Inf anywhere, and nothing in finite extremes") {
  std::vector<float> v(1037, 1.0f);
  v[5] = 3.4e38f;
  v[6] = -3.4e38f;
  v[7] = 1e-45f;
  CHECK(all_finite(v.data(), static_cast<int64_t>(v.size())));
  CHECK(nonfinite_kind(v.data(), static_cast<int64_t>(v.size())).empty());
  for (size_t at : {size_t{0}, size_t{511}, size_t{1036}}) {
    std::vector<float> w = v;
    w[at] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(all_finite(w.data(), static_cast<int64_t>(w.size())));
    CHECK(nonfinite_kind(w.data(), static_cast<int64_t>(w.size())) == "NaN");
    w[at] = -std::numeric_limits<float>::infinity();
    CHECK_FALSE(all_finite(w.data(), static_cast<int64_t>(w.size())));
    CHECK(nonfinite_kind(w.data(), static_cast<int64_t>(w.size())) == "Inf");
  }
}

// A learning rate this large blows the mlp's weights up within a few steps; checkpointing
// every step shows which checkpoint survives.
TEST_CASE("a NaN or Inf stops training with step, stage and layer named and keeps the last good checkpoint") {
  TempDir dir;
  TrainOptions o = train_options(OptimizerKind::sgd, 200);
  o.optimizer.lr = 1e4;
  o.checkpoint_dir = dir.sub("c");
  o.checkpoint_every = 1;
  int64_t fault_step = 0;
  try {
    train(mlp(), o);
    FAIL("training with lr 1e4 did not diverge");
  } catch (const NumericalFault& e) {
    fault_step = e.step();
    CAPTURE(e.what());
    CHECK(e.stage() == 0);
    CHECK(!e.layer().empty());
    CHECK(std::string(e.what()).find("step " + std::to_string(e.step()) + ", stage 0, layer \"" + e.layer() + "\"") ==
          0);
  }
  REQUIRE(fault_step >= 2);
  CHECK(checkpoint_step(dir.sub("c")) == fault_step - 1);
  // The kept checkpoint is good: resuming from it reproduces the same fault at the same step.
  o.resume_dir = dir.sub("c");
  o.checkpoint_dir.clear();
  o.checkpoint_every = 0;
  try {
    train(mlp(), o);
    FAIL("the resumed run did not diverge");
  } catch (const NumericalFault& e) { CHECK(e.step() == fault_step); }

  // The pipeline: the same, with the stage of the layer named.
  const models::Model model = mlp();
  PipelineRunOptions ro = run_options(200);
  ro.optimizer.kind = OptimizerKind::sgd;
  ro.optimizer.lr = 1e4;
  ro.checkpoint_dir = dir.sub("p");
  ro.checkpoint_every = 1;
  try {
    run_pipeline(model, even_plan(model, 2, 2, 4, planner::ScheduleKind::one_f_one_b, false), ro);
    FAIL("the pipeline with lr 1e4 did not diverge");
  } catch (const NumericalFault& e) {
    CAPTURE(e.what());
    CHECK(e.step() >= 2);
    CHECK(checkpoint_step(dir.sub("p")) == e.step() - 1);
    CHECK(std::string(e.what()).find("stage " + std::to_string(e.stage()) + ", layer \"") != std::string::npos);
  }
}

}  // namespace
}  // namespace pw::exec
