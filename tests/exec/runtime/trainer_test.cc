// Single-device training (exec/trainer.h), optimizers and data sources.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "exec/data/data.h"
#include "exec/optimizer.h"
#include "exec/runtime/trainer.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

models::Model tiny_gpt() {
  models::ZooOptions z;
  z.layers = 1;
  z.d_model = 32;
  z.heads = 2;
  z.ffn = 64;
  z.seq = 16;
  z.vocab = 256;
  z.batch = 8;
  return models::build_zoo_model("gpt", z);
}

TEST_CASE("gpt loss on the default text falls by >= 30% within 200 steps (tiny config)") {
  TrainOptions o;
  o.steps = 200;
  o.batch = 8;
  o.optimizer.kind = OptimizerKind::adam;
  o.optimizer.lr = 3e-3;
  TrainResult r = train(tiny_gpt(), o);
  REQUIRE(r.losses.size() == 200);
  double best = r.losses.front();
  for (double l : r.losses) best = std::min(best, l);
  MESSAGE("first loss " << r.losses.front() << ", last " << r.losses.back());
  CHECK(r.losses.front() == doctest::Approx(std::log(256.0)).epsilon(0.05));  // near uniform at init
  CHECK(r.losses.back() <= 0.7 * r.losses.front());
  CHECK(r.peak_memory_bytes >= r.parameter_bytes * 2 + r.optimizer_bytes);
}

TEST_CASE("the train-result document is built next to its type, from the options and the result") {
  TrainOptions o;
  o.steps = 2;
  o.batch = 8;
  o.micro_batch = 4;
  o.checkpoint_dir = "ck";
  TrainResult r;
  r.losses = {2.5, 2.0};
  r.first_step = 3;
  r.checkpoint_step = 5;
  r.data = "synthetic";
  const Json j = TrainRecord{"mlp", "sgd-momentum", 2, o, r};
  CHECK(j.at("format") == "pipewright.train-result/1");
  CHECK(j.at("model") == "mlp");
  CHECK(j.at("optimizer") == "sgd-momentum");
  CHECK(j.at("micro_batch") == 4);
  CHECK(j.at("threads") == 2);
  CHECK(j.at("losses") == Json::array({2.5, 2.0}));
  CHECK(j.at("completed_steps") == 5);
  CHECK(j.at("checkpoint") == Json{{"dir", "ck"}, {"step", 5}});
  o.micro_batch = 0;
  r.checkpoint_step = -1;
  const Json k = TrainRecord{"mlp", "sgd", 1, o, r};
  CHECK(k.at("micro_batch") == 8);
  CHECK_FALSE(k.contains("checkpoint"));
}

TEST_CASE("micro-batching does not change the trained weights' losses (mlp, sgd)") {
  models::ZooOptions z;
  z.depth = 2;
  z.width = 16;
  z.batch = 8;
  const models::Model m = models::build_zoo_model("mlp", z);
  TrainOptions o;
  o.steps = 5;
  o.batch = 8;
  o.optimizer.kind = OptimizerKind::sgd;
  o.optimizer.lr = 0.1;
  TrainResult whole = train(m, o);
  o.micro_batch = 2;
  TrainResult micro = train(m, o);
  for (size_t i = 0; i < whole.losses.size(); ++i)
    CHECK(micro.losses[i] == doctest::Approx(whole.losses[i]).epsilon(1e-4));
}

TEST_CASE("sgd with momentum and adam: hand-checked updates and state sizes") {
  Tensor p({2}), g({2});
  p.data()[0] = 1.0f;
  p.data()[1] = -2.0f;
  g.data()[0] = 0.5f;
  g.data()[1] = 1.0f;
  OptimizerOptions so;
  so.lr = 0.1;
  so.momentum = 0.9;
  Optimizer sgd({&p}, {&g}, so);
  CHECK(sgd.state_bytes() == 8);
  sgd.step();  // v = g; p -= 0.1 g
  CHECK(p.data()[0] == doctest::Approx(0.95));
  sgd.step();  // v = 0.9 g + g = 1.9 g
  CHECK(p.data()[0] == doctest::Approx(0.95 - 0.1 * 0.95));
  Tensor q({1}), h({1});
  q.data()[0] = 1.0f;
  h.data()[0] = 4.0f;
  OptimizerOptions ao;
  ao.kind = OptimizerKind::adam;
  ao.lr = 0.01;
  ao.weight_decay = 0.1;
  Optimizer adam({&q}, {&h}, ao);
  CHECK(adam.state_bytes() == 8);
  adam.step();  // m̂ = g, v̂ = g²: step = lr * (1 + wd * p)
  CHECK(q.data()[0] == doctest::Approx(1.0 - 0.01 * (1.0 + 0.1)).epsilon(1e-5));
  CHECK_THROWS_AS(parse_optimizer_kind("rmsprop", "--optimizer"), InputError);
}

TEST_CASE("data: missing, empty and too short text files are input errors") {
  const models::Model m = tiny_gpt();
  CHECK_THROWS_AS(make_data_source(m, "/nonexistent/file.txt", 1), InputError);
  const std::string empty = "/tmp/pw_exec_empty_" + std::to_string(::getpid()) + ".txt";
  std::ofstream(empty).close();
  CHECK_THROWS_AS(make_data_source(m, empty, 1), InputError);
  std::ofstream(empty) << "short";
  CHECK_THROWS_AS(make_data_source(m, empty, 1), InputError);
  std::remove(empty.c_str());
  auto src = make_data_source(m, "", 1);
  Batch b = src->next(3);
  CHECK(b.data.shape() == std::vector<int64_t>{3, 16});
  CHECK(b.targets.shape() == std::vector<int64_t>{3, 16});
  for (int s = 0; s + 1 < 16; ++s) CHECK(b.targets.data()[s] == b.data.data()[s + 1]);  // next bytes
}

TEST_CASE("train: batch 0 and a micro-batch that does not divide the batch are input errors") {
  TrainOptions o;
  o.batch = 0;
  CHECK_THROWS_AS(train(tiny_gpt(), o), InputError);
  o.batch = 8;
  o.micro_batch = 3;
  CHECK_THROWS_AS(train(tiny_gpt(), o), InputError);
}

}  // namespace
}  // namespace pw::exec
