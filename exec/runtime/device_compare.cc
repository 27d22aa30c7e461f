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

void reset_device_memory_peaks(const std::vector<Card>& cards) {
  for (const Card& c : cards) device_memory(c.gpu).reset_peak();
}

std::vector<int64_t> device_memory_peaks(const std::vector<Card>& cards) {
  std::vector<int64_t> out;
  for (const Card& c : cards) out.push_back(device_memory(c.gpu).peak_bytes());
  return out;
}

}  // namespace pw::exec
