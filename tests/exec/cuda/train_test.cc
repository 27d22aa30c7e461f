// Single-device training on the GPU (exec/runtime/trainer.h with TrainOptions::device) against
// the same run on the host, and its checkpoints (needs a GPU).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "exec/device_ops.h"
#include "exec/layers/network.h"
#include "exec/numerics.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "models/zoo.h"
#include "tests/exec/cuda/gpu_compare.h"

namespace pw::exec::cuda {
namespace {

namespace fs = std::filesystem;

const Device kGpu = Device::cuda(0);

models::Model mlp() {
  models::ZooOptions z;
  z.depth = 3;
  z.width = 64;
  z.batch = 16;
  return models::build_zoo_model("mlp", z);
}

// 10 steps of batch 16 in 2 micro-batches (gradient accumulation), weight decay on.
TrainOptions options(OptimizerKind kind, Device device) {
  TrainOptions o;
  o.steps = 10;
  o.batch = 16;
  o.micro_batch = 8;
  o.seed = 7;
  o.optimizer.kind = kind;
  o.optimizer.lr = default_learning_rate(kind);
  o.optimizer.weight_decay = 0.01;
  o.device = device;
  return o;
}

// A fresh directory under the system's temporary folder, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() / ("pw_gpu_train_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The stage file of the checkpoint of `step` in `dir`: weights, optimizer state and counters.
std::string stage_file(const std::string& dir, int64_t step) {
  return slurp(dir + "/stage-0.step-" + std::to_string(step) + ".bin");
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("step " << i + 1 << ": " << got[i] << " vs " << want[i]);
    CHECK(std::isfinite(got[i]));
    CHECK(std::abs(got[i] - want[i]) <= rel * std::abs(want[i]));
  }
}

TEST_CASE("train on the GPU follows the host within 1e-4 over 10 steps (mlp, sgd-momentum and adam)") {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    INFO((kind == OptimizerKind::adam ? "adam" : "sgd-momentum"));
    const TrainResult host = train(mlp(), options(kind, Device::cpu()));
    const TrainResult gpu = train(mlp(), options(kind, kGpu));
    check_close(gpu.losses, host.losses, 1e-4);
    CHECK(gpu.losses.back() < gpu.losses.front());
    CHECK(gpu.parameter_bytes == host.parameter_bytes);
    CHECK(gpu.optimizer_bytes == host.optimizer_bytes);
    // The device's peak holds at least the weights, their gradients and the optimizer state.
    CHECK(gpu.peak_memory_bytes >= 2 * gpu.parameter_bytes + gpu.optimizer_bytes);
    CHECK(gpu.data == host.data);
  }
}

TEST_CASE("a GPU run resumed from its step-5 checkpoint is bitwise the uninterrupted one") {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    INFO((kind == OptimizerKind::adam ? "adam" : "sgd-momentum"));
    TempDir tmp;
    TrainOptions whole = options(kind, kGpu);
    whole.checkpoint_dir = tmp.sub("whole");
    const TrainResult full = train(mlp(), whole);
    REQUIRE(full.checkpoint_step == 10);

    TrainOptions first = options(kind, kGpu);
    first.steps = 5;
    first.checkpoint_dir = tmp.sub("parts");
    const TrainResult a = train(mlp(), first);
    REQUIRE(a.checkpoint_step == 5);
    TrainOptions rest = options(kind, kGpu);
    rest.resume_dir = tmp.sub("parts");
    rest.checkpoint_dir = tmp.sub("parts");
    const TrainResult b = train(mlp(), rest);
    CHECK(b.first_step == 5);
    REQUIRE(b.checkpoint_step == 10);

    std::vector<double> joined = a.losses;
    joined.insert(joined.end(), b.losses.begin(), b.losses.end());
    CHECK(joined == full.losses);  // exact
    // Weights, optimizer state and counters, byte for byte.
    CHECK(stage_file(tmp.sub("parts"), 10) == stage_file(tmp.sub("whole"), 10));
  }
}

TEST_CASE("checkpoints move between the host and the GPU: same file format, resumed runs agree") {
  TempDir tmp;
  const OptimizerKind kind = OptimizerKind::adam;
  const TrainResult host_full = train(mlp(), options(kind, Device::cpu()));
  for (const bool host_first : {true, false}) {
    INFO((host_first ? "host checkpoint resumed on the GPU" : "GPU checkpoint resumed on the host"));
    const std::string dir = tmp.sub(host_first ? "from_host" : "from_gpu");
    TrainOptions first = options(kind, host_first ? Device::cpu() : kGpu);
    first.steps = 5;
    first.checkpoint_dir = dir;
    const TrainResult a = train(mlp(), first);
    TrainOptions rest = options(kind, host_first ? kGpu : Device::cpu());
    rest.resume_dir = dir;
    const TrainResult b = train(mlp(), rest);
    REQUIRE(b.first_step == 5);
    std::vector<double> joined = a.losses;
    joined.insert(joined.end(), b.losses.begin(), b.losses.end());
    check_close(joined, host_full.losses, 1e-4);
  }
}

TEST_CASE("device finite checks name NaN and Inf as the host's do") {
  CudaDevice& dev = CudaDevice::get(0);
  Tensor a = testing::uniform({1000}, 3), b = testing::uniform({7, 9}, 4), c = testing::uniform({5000}, 5);
  b.data()[17] = std::nanf("");
  c.data()[4321] = INFINITY;
  c.data()[4999] = std::nanf("");
  Tensor da = to_device(a, dev), db = to_device(b, dev), dc = to_device(c, dev);
  CHECK(finite_flags({&da, &db, &dc}) == std::vector<bool>{true, false, false});
  CHECK(finite_flags({&a, &b, &c}) == std::vector<bool>{true, false, false});
  CHECK(nonfinite_kind(db) == "NaN");
  CHECK(nonfinite_kind(dc) == "Inf");
  CHECK(nonfinite_kind(da).empty());
}

TEST_CASE("a diverging GPU run stops with the host's numerical fault (step, layer, quantity)") {
  auto fault = [](Device device) {
    TrainOptions o = options(OptimizerKind::sgd, device);
    o.optimizer.lr = 1e30;
    try {
      (void)train(mlp(), o);
    } catch (const NumericalFault& f) { return f; }
    FAIL("no numerical fault");
    return NumericalFault(0, 0, "", "", "");
  };
  const NumericalFault host = fault(Device::cpu()), gpu = fault(kGpu);
  CHECK(gpu.step() == host.step());
  CHECK(gpu.layer() == host.layer());
  CHECK(gpu.quantity() == host.quantity());
  CHECK(gpu.step() <= 3);
}

// The zoo's small CNN configuration (`train --model resnet50|densenet121` without sizing flags:
// 32x32 images, widths / 8, 10 classes, batch 8), in 2 micro-batches of 4 (batch_norm's
// statistics per micro-batch on both devices).
models::Model small_cnn(const std::string& family) {
  models::ZooOptions z;
  z.image = 32;
  z.width_divisor = 8;
  z.classes = 10;
  z.batch = 8;
  return models::build_zoo_model(family, z);
}

TrainOptions cnn_options(Device device) {
  TrainOptions o;
  o.steps = 10;
  o.batch = 8;
  o.micro_batch = 4;
  o.seed = 3;
  o.optimizer.kind = OptimizerKind::sgd;
  o.optimizer.lr = default_learning_rate(OptimizerKind::sgd);
  o.device = device;
  return o;
}

TEST_CASE("resnet50 and densenet121 (zoo, small) train on the GPU as on the host: 10 steps within 1e-4") {
  for (const char* family : {"resnet50", "densenet121"}) {
    INFO(family);
    const TrainResult host = train(small_cnn(family), cnn_options(Device::cpu()));
    const TrainResult gpu = train(small_cnn(family), cnn_options(kGpu));
    check_close(gpu.losses, host.losses, 1e-4);
    CHECK(gpu.parameter_bytes == host.parameter_bytes);
  }
}

TEST_CASE("a resnet50 GPU run resumed from its step-5 checkpoint is bitwise the uninterrupted one") {
  TempDir tmp;
  TrainOptions whole = cnn_options(kGpu);
  whole.checkpoint_dir = tmp.sub("whole");
  const TrainResult full = train(small_cnn("resnet50"), whole);
  REQUIRE(full.checkpoint_step == 10);
  TrainOptions first = cnn_options(kGpu);
  first.steps = 5;
  first.checkpoint_dir = tmp.sub("parts");
  const TrainResult a = train(small_cnn("resnet50"), first);
  TrainOptions rest = cnn_options(kGpu);
  rest.resume_dir = tmp.sub("parts");
  rest.checkpoint_dir = tmp.sub("parts");
  const TrainResult b = train(small_cnn("resnet50"), rest);
  REQUIRE(b.checkpoint_step == 10);
  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  CHECK(joined == full.losses);
  CHECK(stage_file(tmp.sub("parts"), 10) == stage_file(tmp.sub("whole"), 10));
}

TEST_CASE("a tied LM head trains on the GPU as on the host: one shared table, 10 steps within 1e-4") {
  models::ZooOptions g;
  g.layers = 1;
  g.d_model = 32;
  g.heads = 2;
  g.seq = 8;
  g.vocab = 256;  // byte tokens
  g.batch = 4;
  g.tied_embeddings = true;
  const models::Model gpt = models::build_zoo_model("gpt", g);
  Network host_net(gpt, 1), gpu_net(gpt, 1, kGpu);
  REQUIRE(gpu_net.tied_pair().head >= 0);
  CHECK(gpu_net.tied_pair().table->device() == kGpu);
  CHECK(gpu_net.parameters().size() == host_net.parameters().size());  // the table listed once
  CHECK(gpu_net.parameter_bytes() == host_net.parameter_bytes());
  TempDir tmp;  // the text the model trains on, written here (tests read nothing outside the checkout)
  const std::string text = tmp.sub("text.txt");
  {
    std::ofstream out(text);
    for (int i = 0; i < 200; ++i) out << "line " << i << ": the quick brown fox jumps over the lazy dog\n";
  }
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    INFO((kind == OptimizerKind::adam ? "adam" : "sgd-momentum"));
    TrainOptions o = options(kind, Device::cpu());
    o.batch = 4;
    o.micro_batch = 2;
    o.data_file = text;
    const TrainResult host = train(gpt, o);
    o.device = kGpu;
    const TrainResult gpu = train(gpt, o);
    check_close(gpu.losses, host.losses, 1e-4);
  }
}

}  // namespace
}  // namespace pw::exec::cuda
