// Training data from the user's files through make_data_source (exec/data/data.h): .npy pairs
// (exec/data/npy_samples.h) and CIFAR-10 batches (exec/data/cifar.h) drawn in seeded epochs
// (exec/data/sample_source.h), and the errors that name the file before any training.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/data/data.h"
#include "models/error.h"
#include "models/zoo.h"
#include "tests/exec/data/sample_files.h"

namespace pw::exec {
namespace {

using models::LayerKind;
using models::LayerSpec;
using test::cifar_record;
using test::npy_bytes;
using test::SampleFilesDir;

// input [4] -> linear -> softmax_xent over 3 classes.
models::Model classifier() {
  LayerSpec in{"input", LayerKind::input, {}, {4}, {}};
  LayerSpec fc{"fc", LayerKind::linear, {"input"}, {3}, {{"in", 4}, {"out", 3}}};
  LayerSpec loss{"loss", LayerKind::softmax_xent, {"fc"}, {1}, {{"classes", 3}, {"rows", 1}}};
  return models::Model("clf", {in, fc, loss}, 4);
}

models::Model sample_zoo(const std::string& family) {
  models::ZooOptions z;
  z.batch = 4;
  z.depth = 2;
  z.width = 6;
  z.image = 32;
  z.width_divisor = 16;
  z.classes = 10;
  return models::build_zoo_model(family, z);
}

// N samples of `classifier()`: sample i is (i, i, i, i) with class i % 3.
std::string pair(const SampleFilesDir& dir, int64_t n) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    x.insert(x.end(), 4, static_cast<float>(i));
    y.push_back(i % 3);
  }
  return dir.write("x.npy", npy_bytes("<f4", {n, 4}, x)) + "," + dir.write("y.npy", npy_bytes("<i8", {n}, y));
}

std::string error_of(const models::Model& m, const std::string& data) {
  try {
    make_data_source(m, data, 1, "--data");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("npy pair: every sample once per epoch, in a seeded order, targets with their inputs") {
  SampleFilesDir dir;
  const std::string data = pair(dir, 7);
  auto src = make_data_source(classifier(), data, 5);
  CHECK(src->describe().find("x.npy [7, 4] '<f4'") != std::string::npos);
  std::vector<int> seen;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const Batch b = src->next(7);
    CHECK(b.data.shape() == std::vector<int64_t>{7, 4});
    CHECK(b.targets.shape() == std::vector<int64_t>{7, 1});
    std::vector<int> ids;
    for (int r = 0; r < 7; ++r) {
      const int i = static_cast<int>(b.data.data()[r * 4]);
      CHECK(b.data.data()[r * 4 + 3] == static_cast<float>(i));
      CHECK(b.targets.data()[r] == static_cast<float>(i % 3));
      ids.push_back(i);
    }
    if (epoch == 1) CHECK(ids != seen);  // a new permutation
    seen = ids;
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("npy pair: deterministic from the seed, sample-sequential, restorable") {
  SampleFilesDir dir;
  const std::string data = pair(dir, 5);
  auto whole = make_data_source(classifier(), data, 9), parts = make_data_source(classifier(), data, 9);
  const Batch all = whole->next(12);  // crosses two epoch boundaries
  const Batch a = parts->next(4);
  const DataState at = parts->state();
  CHECK(at.batches == 1);
  const Batch b = parts->next(8);
  for (int r = 0; r < 12; ++r)
    CHECK(all.data.data()[r * 4] == (r < 4 ? a.data.data()[r * 4] : b.data.data()[(r - 4) * 4]));
  auto again = make_data_source(classifier(), data, 9);
  again->restore(at);
  const Batch c = again->next(8);
  CHECK(std::equal(c.data.data(), c.data.data() + c.data.numel(), b.data.data()));
  auto other = make_data_source(classifier(), data, 10);
  const Batch d = other->next(12);
  CHECK(!std::equal(d.data.data(), d.data.data() + d.data.numel(), all.data.data()));
  // A position no run reaches (a checkpoint edited with its checksum recomputed) is refused: past
  // int64 it read the permutation at a negative index.
  CHECK_THROWS_WITH_AS(again->restore({uint64_t{1} << 63, 1}), doctest::Contains("is not one"), pw::InputError);
  CHECK_THROWS_AS(again->restore({5, -1}), pw::InputError);
  again->restore(at);  // and the source still restores to a real one
  const Batch e = again->next(8);
  CHECK(std::equal(e.data.data(), e.data.data() + e.data.numel(), b.data.data()));
}

TEST_CASE("npy pair: uint8 inputs scaled to [0, 1], regression targets for an mse_loss model") {
  SampleFilesDir dir;
  const models::Model mlp = sample_zoo("mlp");  // input [6], prediction [6]
  const std::string x = dir.write("x.npy", npy_bytes<uint8_t>("|u1", {2, 6}, std::vector<uint8_t>(12, 255)));
  const std::string y = dir.write("y.npy", npy_bytes<float>("<f4", {2, 6}, std::vector<float>(12, 0.25f)));
  const Batch b = make_data_source(mlp, x + "," + y, 1)->next(2);
  CHECK(b.data.data()[0] == 1.0f);
  CHECK(b.targets.shape() == std::vector<int64_t>{2, 6});
  CHECK(b.targets.data()[11] == 0.25f);
  const std::string yi = dir.write("yi.npy", npy_bytes<int64_t>("<i8", {2, 6}, std::vector<int64_t>(12, 0)));
  CHECK(error_of(mlp, x + "," + yi) ==
        "--data: " + yi + ": float targets expected (model \"" + mlp.name() + "\" regresses), got '<i8'");
  const std::string y5 = dir.write("y5.npy", npy_bytes<float>("<f4", {2, 5}, std::vector<float>(10, 0)));
  CHECK(error_of(mlp, x + "," + y5) ==
        "--data: " + y5 + ": shape [N, 6] expected (model \"" + mlp.name() + "\"'s prediction), got [2, 5]");
}

TEST_CASE("npy pair: files that do not fit the model are refused before training, naming the file") {
  SampleFilesDir dir;
  const models::Model m = classifier();
  const std::string x = dir.write("x.npy", npy_bytes("<f4", {3, 4}, std::vector<float>(12, 0)));
  const std::string x5 = dir.write("x5.npy", npy_bytes("<f4", {3, 5}, std::vector<float>(15, 0)));
  const std::string y = dir.write("y.npy", npy_bytes<int32_t>("<i4", {3}, {0, 1, 2}));
  const std::string y2 = dir.write("y2.npy", npy_bytes<int32_t>("<i4", {2}, {0, 1}));
  const std::string y3 = dir.write("y3.npy", npy_bytes<int32_t>("<i4", {3}, {0, 3, 1}));
  const std::string yf = dir.write("yf.npy", npy_bytes<float>("<f4", {3}, {0, 0.5f, 1}));
  CHECK(error_of(m, x + "," + y) == "accepted");
  CHECK(error_of(m, x5 + "," + y) == "--data: " + x5 + ": shape [N, 4] expected (model \"clf\"'s input), got [3, 5]");
  CHECK(error_of(m, x + "," + y2) == "--data: " + y2 + ": 2 samples, but " + x + " has 3");
  CHECK(error_of(m, x + "," + y3) ==
        "--data: " + y3 + ": class id 3 at row 1 is out of range: the model has 3 classes [0, 3)");
  CHECK(error_of(m, x + "," + yf) ==
        "--data: " + yf + ": class id 0.5 at row 1 is out of range: the model has 3 classes [0, 3)");
  CHECK(error_of(m, x + "," + dir.file("none.npy")).rfind("--data: " + dir.file("none.npy") + ": No such file", 0) ==
        0);
  CHECK(error_of(m, x) ==
        "--data: expected INPUTS.npy,TARGETS.npy or CIFAR-10 batches FILE.bin[,FILE.bin...] for "
        "model \"clf\", got \"" +
            x + "\" (a text file applies to models with an embedding)");
}

TEST_CASE("CIFAR-10 binary: records as [3, 32, 32] images in [0, 1], several files one data set") {
  SampleFilesDir dir;
  const models::Model vgg = sample_zoo("vgg16");
  std::vector<uint8_t> px(3072);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i % 256);
  const std::string a = dir.write("a.bin", cifar_record(3, px) + cifar_record(9, px));
  const std::string b = dir.write("b.bin", cifar_record(0, px));
  auto src = make_data_source(vgg, a + "," + b, 2);
  CHECK(src->describe() == "CIFAR-10 binary 3 images (" + a + ", " + b + ")");
  const Batch batch = src->next(3);
  CHECK(batch.data.shape() == std::vector<int64_t>{3, 3, 32, 32});
  std::vector<float> labels(batch.targets.data(), batch.targets.data() + 3);
  std::sort(labels.begin(), labels.end());
  CHECK(labels == std::vector<float>{0, 3, 9});
  CHECK(batch.data.data()[255] == 1.0f);        // pixel byte 255
  CHECK(batch.data.data()[3072 + 51] == 0.2f);  // the next image, byte 51
}

TEST_CASE("CIFAR-10 binary: truncated files, labels beyond the classes, models that are not [3, 32, 32]") {
  SampleFilesDir dir;
  const models::Model vgg = sample_zoo("vgg16");
  const std::vector<uint8_t> px(3072, 0);
  const std::string cut = dir.write("cut.bin", cifar_record(1, px) + cifar_record(2, px).substr(0, 100));
  CHECK(error_of(vgg, cut) == "--data: " + cut +
                                  ": 3173 bytes is not a whole number of CIFAR-10 records (3073 bytes each: 1 label "
                                  "byte, 3072 pixel bytes); truncated?");
  const std::string high = dir.write("high.bin", cifar_record(1, px) + cifar_record(12, px));
  CHECK(error_of(vgg, high) ==
        "--data: " + high + ": label 12 of record 1 is out of range: the model has 10 classes [0, 10)");
  const models::Model mlp = sample_zoo("mlp");
  const std::string ok = dir.write("ok.bin", cifar_record(1, px));
  CHECK(error_of(mlp, ok) ==
        "--data: " + ok + ": CIFAR-10 images are [N, 3, 32, 32]; model \"" + mlp.name() + "\"'s input is [N, 6]");
  CHECK(error_of(vgg, dir.write("empty.bin", "")).find("0 bytes is not a whole number") != std::string::npos);
}

}  // namespace pw::exec
