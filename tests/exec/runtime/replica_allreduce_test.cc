// The ring all-reduce over the in-process transport: exact sums and averages (hand-checkable
// values), the same bits on every replica, distinct rounds in flight at once, r = 2 equal bit
// for bit to a plain g0 + g1, chunks spanning tensors and empty chunks, the non-blocking form
// driven on one thread, and a mismatch between replicas caught.
#include <doctest/doctest.h>

#include <thread>

#include "exec/runtime/replica_allreduce.h"
#include "exec/transport/transport_inproc.h"
#include "tests/exec/runtime/interleaved_transport.h"
#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

namespace {

using Clock = Transport::Clock;

// One endpoint's wait for a request: tests only that request (all the blocking all-reduce may
// ask of a wait), sleeping on the endpoint's progress between tests.
struct Endpoint {
  Transport* tr;
  int device;
  void wait(Request& req) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (true) {
      const uint64_t epoch = tr->progress_epoch(device);
      if (req.test()) return;
      if (!tr->wait_for_progress(device, epoch, deadline) && Clock::now() >= deadline)
        throw std::runtime_error("allreduce test: timed out");
    }
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
      Endpoint ep{&tr, d};
      auto wait = [&](Request& r, const MessageTag&, int) { ep.wait(r); };
      auto ptrs = [](std::vector<Tensor>& v) { return std::vector<Tensor*>{&v[0], &v[1]}; };
      sum[d] = grads_of(d);
      replica_allreduce(tr, d, replicas, 0, 1, 0, ptrs(sum[d]), false, wait);
      avg0[d] = grads_of(d);
      avg1[d] = grads_of(d + 3);
      // The root may still be broadcasting round 0 when a replica starts round 1.
      replica_allreduce(tr, d, replicas, 0, 1, 1, ptrs(avg0[d]), true, wait);
      replica_allreduce(tr, d, replicas, 0, 1, 2, ptrs(avg1[d]), true, wait);
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

// The blocking form under 550 seeded schedules of the three threads, switching at every transport
// call, with a wait that tests only the request it is handed. When the blocking form waited on the
// ring's next receive alone, seeds 193, 227, 452 and 537 of these deadlocked: a send pending on a
// full channel (capacity 1) was never retried, and the chunk awaited depended on it. A busy
// machine hit that about once in 4,000 runs of the case above.
TEST_CASE("replica all-reduce: the blocking form completes under 550 seeded interleavings of 3 replicas") {
  const std::vector<int> replicas = {1, 2, 3};
  int deadlocks = 0;
  for (unsigned seed = 0; seed < 550; ++seed) {
    InProcTransport inner(4, 1);
    std::vector<std::vector<Tensor>> out(3);
    const bool completed = testing::run_interleaved(inner, 3, seed, [&](int k, Transport& tr) {
      const int d = replicas[k];
      Endpoint ep{&tr, d};
      auto wait = [&](Request& r, const MessageTag&, int) { ep.wait(r); };
      std::vector<Tensor> a = grads_of(d), b = grads_of(d), c = grads_of(d + 3);
      replica_allreduce(tr, d, replicas, 0, 1, 0, testing::pointers_of(a), false, wait);
      replica_allreduce(tr, d, replicas, 0, 1, 1, testing::pointers_of(b), true, wait);
      replica_allreduce(tr, d, replicas, 0, 1, 2, testing::pointers_of(c), true, wait);
      out[k] = std::move(c);
    });
    if (!completed) {
      ++deadlocks;
      continue;
    }
    for (int k = 0; k < 3; ++k) CHECK(out[k][1].data()[0] == 60.0f);  // 50 + 60 + 70, averaged
  }
  CHECK(deadlocks == 0);
}

TEST_CASE("replica all-reduce: one replica is a no-op and a device outside the replicas is a bug") {
  InProcTransport tr(2, 1);
  std::vector<Tensor> g = grads_of(0);
  auto never = [](Request&, const MessageTag&, int) { throw std::runtime_error("no wait expected"); };
  replica_allreduce(tr, 0, {0}, 0, 0, 0, {&g[0], &g[1]}, true, never);
  CHECK(g[0].data()[0] == 1.0f);
  CHECK_THROWS(replica_allreduce(tr, 1, {0}, 0, 0, 0, {&g[0], &g[1]}, true, never));
}

namespace {

// Gradients of replica p: tensors of the given sizes filled with values that make float sums
// order-sensitive (so that the r = 2 bit-equality below is not trivially true).
std::vector<Tensor> pseudo_random_grads(int p, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> v;
  uint32_t x = 12345u + 7919u * static_cast<uint32_t>(p);
  for (int64_t n : sizes) {
    Tensor t(std::vector<int64_t>{n});
    for (int64_t e = 0; e < n; ++e) {
      x = x * 1664525u + 1013904223u;
      t.data()[e] = static_cast<float>(static_cast<int32_t>(x >> 8) - (1 << 23)) * 1e-3f;
    }
    v.push_back(std::move(t));
  }
  return v;
}

// Runs one all-reduce of every replica on ONE thread: each ring is only ever progressed, never
// waited on, so this also shows RingAllreduce does not block.
void run_rings_on_one_thread(InProcTransport& tr, const std::vector<int>& replicas,
                             std::vector<std::vector<Tensor>>& grads, int round, bool average) {
  std::vector<std::unique_ptr<RingAllreduce>> rings;
  for (size_t p = 0; p < replicas.size(); ++p)
    rings.push_back(std::make_unique<RingAllreduce>(tr, replicas[p], replicas, 0, 0, round,
                                                    testing::pointers_of(grads[p]), average));
  for (int sweep = 0; sweep < 1000; ++sweep) {
    bool all = true;
    for (auto& ring : rings) all = ring->progress() && all;
    if (all) return;
  }
  FAIL("the rings did not finish in 1000 sweeps");
}

}  // namespace

TEST_CASE("ring all-reduce: 2 replicas give g0 + g1 bit for bit (the old sum at replica 0), chunks across tensors") {
  // 7 + 4 + 1 = 12 values: chunk 0 = [0, 6) inside tensor 0, chunk 1 = [6, 12) spans all three.
  const std::vector<int64_t> sizes = {7, 4, 1};
  for (bool average : {false, true}) {
    CAPTURE(average);
    InProcTransport tr(2, 1);
    std::vector<std::vector<Tensor>> g(2);
    g[0] = pseudo_random_grads(0, sizes);
    g[1] = pseudo_random_grads(1, sizes);
    const std::vector<Tensor> a = pseudo_random_grads(0, sizes), b = pseudo_random_grads(1, sizes);
    run_rings_on_one_thread(tr, {0, 1}, g, 0, average);
    for (size_t k = 0; k < sizes.size(); ++k)
      for (int64_t e = 0; e < sizes[k]; ++e) {
        float want = a[k].data()[e] + b[k].data()[e];
        if (average) want /= 2.0f;
        CHECK(g[0][k].data()[e] == want);
        CHECK(g[1][k].data()[e] == want);
      }
  }
}

TEST_CASE("ring all-reduce: 4 replicas sum exactly, fewer values than replicas, and every replica has the same bits") {
  for (int64_t n : {int64_t{10}, int64_t{3}, int64_t{1}}) {
    CAPTURE(n);
    InProcTransport tr(5, 1);
    const std::vector<int> replicas = {4, 2, 0, 3};  // ring order is the list's, not the devices'
    std::vector<std::vector<Tensor>> g(4), r(4);
    for (int p = 0; p < 4; ++p) {
      Tensor t(std::vector<int64_t>{n});
      for (int64_t e = 0; e < n; ++e) t.data()[e] = static_cast<float>((p + 1) * (e + 1));  // sum 10 (e + 1)
      g[p].push_back(std::move(t));
      r[p] = pseudo_random_grads(p, {n});
    }
    run_rings_on_one_thread(tr, replicas, g, 0, false);
    run_rings_on_one_thread(tr, replicas, r, 1, true);
    for (int p = 0; p < 4; ++p)
      for (int64_t e = 0; e < n; ++e) {
        CHECK(g[p][0].data()[e] == static_cast<float>(10 * (e + 1)));
        CHECK(r[p][0].data()[e] == r[0][0].data()[e]);  // same bits everywhere
      }
    // The average equals the exact mean up to float rounding of a 4-term sum.
    std::vector<std::vector<Tensor>> ref(4);
    for (int p = 0; p < 4; ++p) ref[p] = pseudo_random_grads(p, {n});
    for (int64_t e = 0; e < n; ++e) {
      double mean = 0;
      for (int p = 0; p < 4; ++p) mean += ref[p][0].data()[e] / 4.0;
      CHECK(r[0][0].data()[e] == doctest::Approx(mean).epsilon(1e-6));
    }
  }
}

TEST_CASE("ring all-reduce: replicas whose gradients differ in size are caught") {
  InProcTransport tr(2, 1);
  std::vector<std::vector<Tensor>> g(2);
  g[0] = pseudo_random_grads(0, {4});
  g[1] = pseudo_random_grads(1, {6});
  CHECK_THROWS_WITH(run_rings_on_one_thread(tr, {0, 1}, g, 0, false),
                    doctest::Contains("the replicas' gradients differ in size"));
}

// Buckets keep the whole vector's chunks. With r = 3, chunk c is summed as
// g_{c+2} + (g_{c+1} + g_c); for g_0 = 1e8, g_1 = 1, g_2 = -1e8 in float that is 0 in chunks 0
// and 1 and 1 in chunk 2 (1e8 + 1 rounds to 1e8). Six values, chunks [0,2) [2,4) [4,6): the
// whole ring gives 0 0 0 0 1 1, and so must buckets [3,6) then [0,3) — a bucket ring with chunks
// of its own ([0,1) [1,2) [2,3) for the first three values) would give 1 at value 2.
TEST_CASE("ring all-reduce: buckets over sub-ranges give the whole ring's bits (3 replicas, order-sensitive sums)") {
  const std::vector<int> replicas = {0, 1, 2};
  const float g[3] = {1e8f, 1.0f, -1e8f};
  for (const std::vector<std::pair<int64_t, int64_t>>& buckets :
       {std::vector<std::pair<int64_t, int64_t>>{{0, -1}}, {{3, 6}, {0, 3}}, {{5, 6}, {1, 5}, {0, 1}}}) {
    CAPTURE(buckets.size());
    InProcTransport tr(3, 1);
    std::vector<std::vector<Tensor>> out(3);
    std::vector<std::thread> threads;
    for (int d : replicas)
      threads.emplace_back([&, d] {
        out[d].emplace_back(std::vector<int64_t>{2});  // two tensors: values [0,2) and [2,6)
        out[d].emplace_back(std::vector<int64_t>{4});
        for (Tensor& t : out[d]) t.fill(g[d]);
        const std::vector<Tensor*> ptrs{&out[d][0], &out[d][1]};
        // All buckets in flight at once, progressed on this thread.
        std::vector<std::unique_ptr<RingAllreduce>> rings;
        for (size_t b = 0; b < buckets.size(); ++b)
          rings.push_back(std::make_unique<RingAllreduce>(tr, d, replicas, 0, 0, static_cast<int>(b), ptrs, false,
                                                          buckets[b].first, buckets[b].second));
        const auto deadline = Clock::now() + std::chrono::seconds(30);
        while (true) {
          const uint64_t epoch = tr.progress_epoch(d);
          bool all = true;
          for (auto& r : rings) all = r->progress() && all;
          if (all) break;
          if (!tr.wait_for_progress(d, epoch, deadline) && Clock::now() >= deadline)
            throw std::runtime_error("bucketed all-reduce test: timed out");
        }
      });
    for (auto& t : threads) t.join();
    const float expect[6] = {0, 0, 0, 0, 1, 1};
    for (int d : replicas) {
      CAPTURE(d);
      for (int k = 0; k < 6; ++k) {
        CAPTURE(k);
        const float v = k < 2 ? out[d][0].data()[k] : out[d][1].data()[k - 2];
        CHECK(v == expect[k]);
      }
    }
  }
}

TEST_CASE("ring all-reduce: a bucket outside the gradients is a bug") {
  InProcTransport tr(2, 1);
  Tensor a(std::vector<int64_t>{4});
  CHECK_THROWS_WITH(RingAllreduce(tr, 0, {0, 1}, 0, 0, 0, {&a}, false, 2, 5),
                    doctest::Contains("bucket [2, 5) outside the 4 gradient values"));
}
