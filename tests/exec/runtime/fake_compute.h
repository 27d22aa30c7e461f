// FakeCompute: a StageCompute that checks the runtime's protocol instead of doing math.
// Forward payloads carry (stage, micro-batch, iteration) so every receive is verified; each
// stage keeps a log of its calls in order ("F0", "B0", "W0", "BW3", "S").
#pragma once

#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/stage_compute.h"

namespace pw::exec::testing {

class FakeCompute : public StageCompute {
 public:
  explicit FakeCompute(int stages, std::chrono::microseconds op_time = std::chrono::microseconds(0))
      : stages_(stages), op_time_(op_time), st_(stages) {}

  int num_stages() const override { return stages_; }

  std::vector<Tensor> forward(const OpContext& c, std::vector<Tensor> in) override {
    State& s = st_[c.stage];
    if (c.stage > 0) expect_payload(in, code(c.stage - 1, c.micro_batch, c.iteration), c, "forward input");
    else if (!in.empty()) fail(c, "stage 0 got a forward payload");
    if (!s.forwarded.insert(c.micro_batch).second) fail(c, "forward twice");
    s.log.push_back("F" + std::to_string(c.micro_batch));
    s.versions.push_back(c.weight_version);
    ++s.live;
    busy();
    if (fail_forward_ == c.stage) throw std::runtime_error("injected failure in stage " + std::to_string(c.stage));
    if (c.stage == stages_ - 1) return {};
    return payload(code(c.stage, c.micro_batch, c.iteration), c.stage);
  }

  std::vector<Tensor> backward_input(const OpContext& c, std::vector<Tensor> g) override {
    State& s = st_[c.stage];
    check_grad(c, g);
    if (!s.input_done.insert(c.micro_batch).second) fail(c, "B twice");
    s.log.push_back("B" + std::to_string(c.micro_batch));
    busy();
    if (c.stage == 0) return {};
    return payload(-code(c.stage, c.micro_batch, c.iteration), c.stage);
  }

  void backward_weight(const OpContext& c) override {
    State& s = st_[c.stage];
    if (!s.input_done.count(c.micro_batch)) fail(c, "W before B");
    s.input_done.erase(c.micro_batch);
    s.forwarded.erase(c.micro_batch);
    s.log.push_back("W" + std::to_string(c.micro_batch));
    --s.live;
    ++s.pending_grads;
    busy();
  }

  std::vector<Tensor> backward(const OpContext& c, std::vector<Tensor> g) override {
    State& s = st_[c.stage];
    check_grad(c, g);
    s.forwarded.erase(c.micro_batch);
    s.log.push_back("BW" + std::to_string(c.micro_batch));
    --s.live;
    ++s.pending_grads;
    busy();
    if (c.stage == 0) return {};
    return payload(-code(c.stage, c.micro_batch, c.iteration), c.stage);
  }

  void step(int stage, int iteration) override {
    State& s = st_[stage];
    s.log.push_back("S");
    s.steps_with_grads += s.pending_grads > 0 ? 1 : 0;
    s.pending_grads = 0;
    ++s.version;
  }

  int64_t weight_version(int stage) const override { return st_[stage].version; }
  int64_t memory_bytes(int stage) const override { return 1000 + 100 * st_[stage].live; }

  struct State {
    std::vector<std::string> log;
    std::vector<int64_t> versions;  // weight_version passed to each forward
    std::set<int> forwarded, input_done;
    int live = 0, pending_grads = 0, steps_with_grads = 0;
    int64_t version = 0;
  };
  const State& state(int stage) const { return st_[stage]; }
  State& state(int stage) { return st_[stage]; }
  int fail_forward_ = -1;

 private:
  static float code(int stage, int mb, int it) { return 1.0f + stage * 1000.0f + mb + it * 100000.0f; }
  static std::vector<Tensor> payload(float v, int stage) {
    std::vector<Tensor> out;
    out.emplace_back(std::vector<int64_t>{3});
    out.back().fill(v);
    out.emplace_back(std::vector<int64_t>{1});  // a second tensor, as a skip connection would
    out.back().fill(static_cast<float>(stage));
    return out;
  }
  void expect_payload(const std::vector<Tensor>& in, float v, const OpContext& c, const char* what) const {
    if (in.size() != 2 || in[0].numel() != 3 || in[0].data()[2] != v) fail(c, std::string("bad ") + what);
  }
  void check_grad(const OpContext& c, const std::vector<Tensor>& g) const {
    if (!st_[c.stage].forwarded.count(c.micro_batch)) fail(c, "backward before forward");
    if (c.stage == stages_ - 1) {
      if (!g.empty()) fail(c, "last stage got a gradient payload");
    } else {
      expect_payload(g, -code(c.stage + 1, c.micro_batch, c.iteration), c, "gradient");
    }
  }
  [[noreturn]] static void fail(const OpContext& c, const std::string& what) {
    throw std::runtime_error("fake compute: " + what + " at stage " + std::to_string(c.stage) + " mb " +
                             std::to_string(c.micro_batch));
  }
  void busy() const {
    if (op_time_.count() == 0) return;
    const auto until = std::chrono::steady_clock::now() + op_time_;
    while (std::chrono::steady_clock::now() < until) {}
  }

  int stages_;
  std::chrono::microseconds op_time_;
  std::vector<State> st_;
};

}  // namespace pw::exec::testing
