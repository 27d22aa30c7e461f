#include "exec/runtime/device_compare.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <utility>

#include "exec/device_ops.h"
#include "exec/device_streams.h"
#include "exec/layers/network.h"
#include "exec/runtime/run_setup.h"
#include "models/error.h"

namespace pw::exec {

std::vector<Card> cards_of_lanes(const std::vector<Device>& lanes) {
  std::vector<Card> cards;
  for (int w = 0; w < static_cast<int>(lanes.size()); ++w) {
    const Device gpu = Device::cuda(lanes[w].index);
    auto it = std::find_if(cards.begin(), cards.end(), [&](const Card& c) { return c.gpu == gpu; });
    if (it == cards.end()) it = cards.insert(cards.end(), Card{gpu, {}});
    it->workers.push_back(w);
  }
  return cards;
}

int64_t busy_ns(const sim::Trace& trace, int device) {
  using K = planner::OpKind;
  int64_t ns = 0;
  for (const sim::TraceEvent& e : trace.events) {
    if (e.is_transfer || e.device != device) continue;
    if (e.kind == K::F || e.kind == K::B || e.kind == K::W || e.kind == K::BW || e.kind == K::step)
      ns += e.end_ns - e.start_ns;
  }
  return ns;
}

int64_t shared_card_bound_ns(const sim::Trace& trace, int64_t iteration_ns, const std::vector<Card>& cards) {
  int64_t bound = iteration_ns;
  for (const Card& c : cards) {
    int64_t work = 0;
    for (int w : c.workers) work += busy_ns(trace, w);
    bound = std::max(bound, work);
  }
  return bound;
}

int64_t card_peak_bytes(const sim::Trace& trace, const std::vector<int>& workers) {
  std::map<int, int64_t> live;
  for (int w : workers) live[w] = 0;
  int64_t sum = 0, peak = 0;
  for (const sim::MemorySample& m : trace.memory) {
    auto it = live.find(m.device);
    if (it == live.end()) continue;
    sum += m.bytes - it->second;
    it->second = m.bytes;
    peak = std::max(peak, sum);
  }
  return peak;
}

std::string shared_card_note(const std::vector<Card>& cards) {
  std::string shared;
  for (const Card& c : cards) {
    if (c.workers.size() < 2) continue;
    shared += (shared.empty() ? "" : ", ") + std::to_string(c.workers.size()) + " on " + c.gpu.to_string();
  }
  if (shared.empty()) return "";
  return "note: workers share a GPU (" + shared +
         ": streams of one card); the simulation treats each as a device of its own, so its prediction is an "
         "optimistic bound";
}

std::vector<int64_t> measure_device_step_ns(const models::Model& model, const planner::Plan& plan,
                                            const OptimizerOptions& optimizer, Device device) {
  bind_thread(device);
  Network net(model, 1, device);
  const int devices = plan.num_stages() / std::max(1, plan.chunks);
  std::vector<int64_t> out(devices, 0);
  constexpr int kWarmup = 3, kTimed = 9;
  for (int d = 0; d < devices; ++d) {
    // As the run: one optimizer per stage (LayerStageCompute), the worker's stages in turn.
    struct StageStep {
      std::unique_ptr<LayerRange> range;
      std::vector<Tensor*> params, grads;
      std::unique_ptr<Optimizer> opt;
    };
    std::vector<StageStep> stages;
    for (int s = d; s < plan.num_stages(); s += devices) {
      StageStep st;
      st.range = std::make_unique<LayerRange>(net, plan.stages[s].first_layer, plan.stages[s].end_layer);
      st.params = st.range->parameters();
      st.grads = st.range->gradients();
      if (st.params.empty()) continue;
      st.opt = std::make_unique<Optimizer>(st.params, st.grads, optimizer, device_memory(device));
      stages.push_back(std::move(st));
    }
    if (stages.empty()) continue;
    std::vector<int64_t> t;
    for (int rep = 0; rep < kWarmup + kTimed; ++rep) {
      const auto a = std::chrono::steady_clock::now();
      bool finite = true;
      for (StageStep& st : stages) {
        for (bool ok : finite_flags(st.grads)) finite = finite && ok;
        st.opt->step();
        for (bool ok : finite_flags(st.params)) finite = finite && ok;
        st.range->zero_grad();
      }
      const auto b = std::chrono::steady_clock::now();
      synchronize(device);  // the zeroing the run leaves queued, untimed
      PW_CHECK(finite, "non-finite weights while timing the optimizer step on the device");
      if (rep >= kWarmup) t.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    }
    out[d] = median_ns(std::move(t));
  }
  return out;
}

void reset_device_memory_peaks(const std::vector<Card>& cards) {
  for (const Card& c : cards) device_memory(c.gpu).reset_peak();
}

std::vector<int64_t> device_memory_peaks(const std::vector<Card>& cards) {
  std::vector<int64_t> out;
  for (const Card& c : cards) out.push_back(device_memory(c.gpu).peak_bytes());
  return out;
}

}  // namespace pw::exec
