// replica_allreduce over the in-process transport: exact sums and averages (hand-checkable
// values), the same bits on every replica, distinct rounds in flight at once, and a mismatch
// between replicas caught.
#include <doctest/doctest.h>

#include <thread>

#include "exec/runtime/replica_allreduce.h"
#include "exec/transport/transport_inproc.h"

using namespace pw;
using namespace pw::exec;

namespace {

using Clock = Transport::Clock;

// Drives one endpoint: waits for a request, progressing that endpoint's pending sends.
struct Endpoint {
  Transport* tr;
  int device;
  std::vector<std::unique_ptr<Request>> pending;
  void wait(Request& req) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (true) {
      const uint64_t epoch = tr->progress_epoch(device);
      if (req.test()) return;
      for (auto& p : pending) p->test();
      if (req.test()) return;
      if (!tr->wait_for_progress(device, epoch, deadline) && Clock::now() >= deadline)
        throw std::runtime_error("allreduce test: timed out");
    }
  }
  void flush() {
    for (auto& p : pending) wait(*p);
    pending.clear();
  }
};

// Replica d (device d) holds two gradients: [d+1, 2(d+1)] and [10(d+1)].
std::vector<Tensor> grads_of(int d) {
  Tensor a(std::vector<int64_t>{2}), b(std::vector<int64_t>{1});
  a.data()[0] = static_cast<float>(d + 1);
  a.data()[1] = static_cast<float>(2 * (d + 1));
  b.data()[0] = static_cast<float>(10 * (d + 1));
  std::vector<Tensor> v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
  return v;
}

}  // namespace

TEST_CASE("replica all-reduce: 3 replicas sum (sync) and average (async, two rounds in flight), same bits everywhere") {
  const std::vector<int> replicas = {1, 2, 3};  // device 0 is another stage's
  InProcTransport tr(4, 1);
  std::vector<std::vector<Tensor>> sum(4), avg0(4), avg1(4);
  std::vector<std::thread> threads;
  for (int d : replicas)
    threads.emplace_back([&, d] {
      Endpoint ep{&tr, d, {}};
      auto wait = [&](Request& r, const MessageTag&, int) { ep.wait(r); };
      auto ptrs = [](std::vector<Tensor>& v) { return std::vector<Tensor*>{&v[0], &v[1]}; };
      sum[d] = grads_of(d);
      replica_allreduce(tr, d, replicas, 0, 1, 0, ptrs(sum[d]), false, wait, ep.pending);
      avg0[d] = grads_of(d);
      avg1[d] = grads_of(d + 3);
      // The root may still be broadcasting round 0 when a replica starts round 1.
      replica_allreduce(tr, d, replicas, 0, 1, 1, ptrs(avg0[d]), true, wait, ep.pending);
      replica_allreduce(tr, d, replicas, 0, 1, 2, ptrs(avg1[d]), true, wait, ep.pending);
      ep.flush();
    });
  for (auto& t : threads) t.join();
  for (int d : replicas) {
    CAPTURE(d);
    // 2+3+4 = 9, 4+6+8 = 18, 20+30+40 = 90.
    CHECK(sum[d][0].data()[0] == 9.0f);
    CHECK(sum[d][0].data()[1] == 18.0f);
    CHECK(sum[d][1].data()[0] == 90.0f);
    CHECK(avg0[d][0].data()[0] == 3.0f);
    CHECK(avg0[d][1].data()[0] == 30.0f);
    // devices 4, 5, 6: 5+6+7 = 18 -> 6; 50+60+70 -> 60.
    CHECK(avg1[d][0].data()[0] == 6.0f);
    CHECK(avg1[d][0].data()[1] == 12.0f);
    CHECK(avg1[d][1].data()[0] == 60.0f);
  }
}

TEST_CASE("replica all-reduce: one replica is a no-op and a device outside the replicas is a bug") {
  InProcTransport tr(2, 1);
  std::vector<Tensor> g = grads_of(0);
  std::vector<std::unique_ptr<Request>> pending;
  auto never = [](Request&, const MessageTag&, int) { throw std::runtime_error("no wait expected"); };
  replica_allreduce(tr, 0, {0}, 0, 0, 0, {&g[0], &g[1]}, true, never, pending);
  CHECK(g[0].data()[0] == 1.0f);
  CHECK(pending.empty());
  CHECK_THROWS(replica_allreduce(tr, 1, {0}, 0, 0, 0, {&g[0], &g[1]}, true, never, pending));
}
