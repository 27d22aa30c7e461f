#include <doctest/doctest.h>

#include <thread>

#include "exec/transport/transport_inproc.h"

using namespace pw::exec;
using Clock = Transport::Clock;

namespace {
Message make_message(float value, int64_t n = 4) {
  Message m;
  m.tensors.emplace_back(std::vector<int64_t>{n});
  m.tensors.back().fill(value);
  return m;
}
MessageTag tag(int mb, Direction dir = Direction::forward, int stage = 0, int it = 0) {
  return MessageTag{it, stage, mb, dir};
}
}  // namespace

TEST_CASE("inproc transport: a message moves its buffer to the receiver (zero-copy)") {
  InProcTransport t(2);
  Message m = make_message(3.0f, 16);
  const float* buffer = m.tensors[0].data();
  auto s = t.isend(0, 1, tag(0), std::move(m));
  CHECK(s->test());
  auto r = t.irecv(1, 0, tag(0));
  REQUIRE(r->test());
  Message got = r->take();
  REQUIRE(got.tensors.size() == 1);
  CHECK(got.tensors[0].data() == buffer);
  CHECK(got.tensors[0].data()[15] == 3.0f);
  CHECK(got.bytes() == 64);
  CHECK(t.buffered(1) == 0);
}

TEST_CASE("inproc transport: receives match by source and tag, in any order") {
  InProcTransport t(3);
  t.isend(0, 2, tag(0), make_message(1));
  t.isend(0, 2, tag(1), make_message(2));
  t.isend(1, 2, tag(0), make_message(3));
  t.isend(0, 2, tag(0, Direction::backward), make_message(4));
  auto r1 = t.irecv(2, 0, tag(1));
  auto r3 = t.irecv(2, 1, tag(0));
  auto r4 = t.irecv(2, 0, tag(0, Direction::backward));
  auto r0 = t.irecv(2, 0, tag(0));
  auto r_missing = t.irecv(2, 0, tag(0, Direction::forward, 1));
  REQUIRE((r1->test() && r3->test() && r4->test() && r0->test()));
  CHECK(!r_missing->test());
  CHECK(r1->take().tensors[0].data()[0] == 2);
  CHECK(r3->take().tensors[0].data()[0] == 3);
  CHECK(r4->take().tensors[0].data()[0] == 4);
  CHECK(r0->take().tensors[0].data()[0] == 1);
}

TEST_CASE("inproc transport: bounded channel keeps extra sends pending until the receiver takes one") {
  InProcTransport t(2, /*capacity=*/2);
  auto s0 = t.isend(0, 1, tag(0), make_message(0));
  auto s1 = t.isend(0, 1, tag(1), make_message(1));
  auto s2 = t.isend(0, 1, tag(2), make_message(2));
  CHECK(s0->test());
  CHECK(s1->test());
  CHECK(!s2->test());
  CHECK(t.unexpected(0, 1) == 2);
  CHECK(t.buffered(1) == 2);
  const uint64_t epoch = t.progress_epoch(0);
  auto r0 = t.irecv(1, 0, tag(0));
  REQUIRE(r0->test());
  CHECK(t.progress_epoch(0) != epoch);  // the sender is told that space was freed
  CHECK(s2->test());
  CHECK(t.unexpected(0, 1) == 2);
}

TEST_CASE("inproc transport: a posted receive always accepts its message, even on a full channel") {
  InProcTransport t(2, /*capacity=*/1);
  auto s0 = t.isend(0, 1, tag(0), make_message(0));
  CHECK(s0->test());
  auto s5 = t.isend(0, 1, tag(5), make_message(5));
  CHECK(!s5->test());
  auto r5 = t.irecv(1, 0, tag(5));  // the receiver wants 5 before 0
  CHECK(s5->test());
  REQUIRE(r5->test());
  CHECK(r5->take().tensors[0].data()[0] == 5);
  CHECK(t.unexpected(0, 1) == 1);
}

TEST_CASE("inproc transport: self-sends work") {
  InProcTransport t(1, 1);
  auto s = t.isend(0, 0, tag(3), make_message(7));
  CHECK(s->test());
  auto r = t.irecv(0, 0, tag(3));
  REQUIRE(r->test());
  CHECK(r->take().tensors[0].data()[0] == 7);
}

TEST_CASE("inproc transport: wait_for_progress times out, and throws after cancel") {
  InProcTransport t(2, 1, std::chrono::microseconds(10));
  const uint64_t e = t.progress_epoch(1);
  CHECK_FALSE(t.wait_for_progress(1, e, Clock::now() + std::chrono::milliseconds(5)));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.cancel();
  });
  CHECK_THROWS_AS(t.wait_for_progress(1, e, Clock::now() + std::chrono::seconds(20)), TransportCancelled);
  canceller.join();
  t.reset();
  CHECK_FALSE(t.cancelled());
}

TEST_CASE("inproc transport: producer and consumer threads exchange 2000 messages in order of tags") {
  constexpr int kCount = 2000;
  InProcTransport t(2, 3);
  std::thread producer([&] {
    std::vector<std::unique_ptr<Request>> pending;
    for (int i = 0; i < kCount; ++i) {
      auto s = t.isend(0, 1, tag(i), make_message(static_cast<float>(i), 2));
      if (!s->test()) pending.push_back(std::move(s));
      while (pending.size() > 8) {
        const uint64_t e = t.progress_epoch(0);
        std::erase_if(pending, [](auto& r) { return r->test(); });
        if (pending.size() > 8) t.wait_for_progress(0, e, Clock::now() + std::chrono::seconds(20));
      }
    }
    while (!pending.empty()) {
      const uint64_t e = t.progress_epoch(0);
      std::erase_if(pending, [](auto& r) { return r->test(); });
      if (!pending.empty()) t.wait_for_progress(0, e, Clock::now() + std::chrono::seconds(20));
    }
  });
  int64_t sum = 0;
  bool ok = true;
  for (int i = 0; i < kCount; ++i) {
    auto r = t.irecv(1, 0, tag(i));
    while (true) {
      const uint64_t e = t.progress_epoch(1);
      if (r->test()) break;
      t.wait_for_progress(1, e, Clock::now() + std::chrono::seconds(20));
    }
    Message m = r->take();
    ok = ok && m.tensors[0].data()[1] == static_cast<float>(i);
    sum += static_cast<int64_t>(m.tensors[0].data()[0]);
  }
  producer.join();
  CHECK(ok);
  CHECK(sum == int64_t{kCount} * (kCount - 1) / 2);
  CHECK(t.buffered(1) == 0);
}
