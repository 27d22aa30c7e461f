// MpiTransport between ranks 0 and 1 (ranks >= 2 only take part in the barriers); run under
// mpirun with >= 2 ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "exec/transport/transport_mpi.h"
#include "tests/exec/mpi_test_world.h"

using namespace pw::exec;
using pw::exec::testing::world;
using Clock = Transport::Clock;

namespace {

constexpr auto kWait = std::chrono::seconds(30);

Message filled(std::vector<std::vector<int64_t>> shapes, float base) {
  Message m;
  for (auto& s : shapes) {
    m.tensors.emplace_back(s);
    Tensor& t = m.tensors.back();
    for (int64_t k = 0; k < t.numel(); ++k) t.data()[k] = base + static_cast<float>(k);
  }
  return m;
}

// Tests the request until done, waiting on the transport in between (fails the case past kWait).
bool wait_done(MpiTransport& t, Request& r) {
  const auto deadline = Clock::now() + kWait;
  while (true) {
    const uint64_t e = t.progress_epoch(world().rank());
    if (r.test()) return true;
    if (!t.wait_for_progress(world().rank(), e, deadline) && Clock::now() >= deadline) return false;
  }
}

void barrier() { world().barrier(Clock::now() + kWait, "test barrier"); }

}  // namespace

TEST_CASE("mpi transport: tags pack (iteration mod window, stage, micro-batch, direction) into distinct MPI tags") {
  MpiTransport t(world(), 2, 3);
  CHECK(t.iteration_window() == std::min<int64_t>(1024, (static_cast<int64_t>(world().tag_upper_bound()) + 1) / 12));
  CHECK(t.mpi_tag({0, 0, 0, Direction::forward}) == 0);
  CHECK(t.mpi_tag({0, 0, 0, Direction::backward}) == 1);
  CHECK(t.mpi_tag({1, 1, 2, Direction::backward}) == ((1 * 2 + 1) * 3 + 2) * 2 + 1);
  CHECK(t.mpi_tag({t.iteration_window() + 1, 1, 2, Direction::backward}) == 23);  // the window wraps
  std::set<int> seen;
  for (int it = 0; it < 2; ++it)
    for (int s = 0; s < 2; ++s)
      for (int j = 0; j < 3; ++j)
        for (Direction d : {Direction::forward, Direction::backward}) seen.insert(t.mpi_tag({it, s, j, d}));
  CHECK(seen.size() == 24);
  CHECK(*seen.rbegin() <= world().tag_upper_bound());
}

TEST_CASE(
    "mpi transport: with collectives, replica all-reduce tags take a second block and point-to-point tags keep "
    "theirs") {
  MpiTransport t(world(), 2, 3, std::chrono::microseconds(50), /*collectives=*/true);
  // The all-reduce block has C = max(micro-batches, ranks) slots per stage (ring rounds x steps).
  const int C = std::max(3, world().size());
  const int w = t.iteration_window();
  CHECK(w == std::min<int64_t>(1024, (static_cast<int64_t>(world().tag_upper_bound()) + 1) / (4 * (3 + C))));
  CHECK(t.mpi_tag({1, 1, 2, Direction::backward}) == ((1 * 2 + 1) * 3 + 2) * 2 + 1);
  CHECK(t.mpi_tag({0, 0, 0, Direction::reduce}) == w * 12);
  CHECK(t.mpi_tag({1, 1, 2, Direction::broadcast}) == w * 12 + ((1 * 2 + 1) * C + 2) * 2 + 1);
  CHECK(t.mpi_tag({0, 0, C - 1, Direction::reduce}) == w * 12 + (C - 1) * 2);
  CHECK_THROWS(t.mpi_tag({0, 0, C, Direction::reduce}));
  CHECK_THROWS(t.mpi_tag({0, 0, 3, Direction::forward}));
  std::set<int> seen;
  for (int it = 0; it < 2; ++it)
    for (int s = 0; s < 2; ++s) {
      for (int j = 0; j < 3; ++j)
        for (Direction d : {Direction::forward, Direction::backward}) seen.insert(t.mpi_tag({it, s, j, d}));
      for (int j = 0; j < C; ++j)
        for (Direction d : {Direction::reduce, Direction::broadcast}) seen.insert(t.mpi_tag({it, s, j, d}));
    }
  CHECK(seen.size() == static_cast<size_t>(24 + 8 * C));
  CHECK(*seen.rbegin() <= world().tag_upper_bound());
}

TEST_CASE("mpi transport: receives in any order, several tensors with shapes, version and send time") {
  REQUIRE(world().size() >= 2);
  MpiTransport t(world(), 4, 4);
  t.set_epoch(Clock::time_point(std::chrono::nanoseconds(0)));  // same origin on both ranks: times exact
  const int me = world().rank();
  if (me == 0) {
    std::vector<std::unique_ptr<Request>> sends;
    for (int j = 0; j < 4; ++j) {
      Message m = filled({{2, 3}, {5}, {1, 2, 2}}, 100.0f * j);
      m.weight_version = 10 + j;
      m.send_time_ns = 123456789 + j;
      sends.push_back(t.isend(0, 1, {0, 1, j, Direction::forward}, std::move(m)));
    }
    sends.push_back(t.isend(0, 1, {0, 2, 1, Direction::backward}, filled({{7}}, -1.0f)));
    for (auto& s : sends) CHECK(wait_done(t, *s));
  } else if (me == 1) {
    // The backward one first, then the forward ones in reverse order.
    auto rb = t.irecv(1, 0, {0, 2, 1, Direction::backward});
    REQUIRE(wait_done(t, *rb));
    Message b = rb->take();
    REQUIRE(b.tensors.size() == 1);
    CHECK(b.tensors[0].data()[6] == 5.0f);
    CHECK(b.weight_version == -1);
    for (int j = 3; j >= 0; --j) {
      auto r = t.irecv(1, 0, {0, 1, j, Direction::forward});
      REQUIRE(wait_done(t, *r));
      Message m = r->take();
      REQUIRE(m.tensors.size() == 3);
      CHECK(m.tensors[0].shape() == std::vector<int64_t>{2, 3});
      CHECK(m.tensors[1].shape() == std::vector<int64_t>{5});
      CHECK(m.tensors[2].shape() == std::vector<int64_t>{1, 2, 2});
      CHECK(m.tensors[0].data()[5] == 100.0f * j + 5);
      CHECK(m.tensors[1].data()[4] == 100.0f * j + 4);
      CHECK(m.tensors[2].data()[3] == 100.0f * j + 3);
      CHECK(m.weight_version == 10 + j);
      CHECK(m.send_time_ns == 123456789 + j);
      CHECK(m.bytes() == (6 + 5 + 4) * 4);
    }
  }
  barrier();
}

TEST_CASE("mpi transport: a large payload (rendezvous) arrives intact while both sides poll") {
  REQUIRE(world().size() >= 2);
  MpiTransport t(world(), 2, 1);
  const int64_t n = 1 << 20;  // 4 MiB
  if (world().rank() == 0) {
    auto s = t.isend(0, 1, {3, 0, 0, Direction::forward}, filled({{n}}, 0.5f));
    CHECK(wait_done(t, *s));
  } else if (world().rank() == 1) {
    auto r = t.irecv(1, 0, {3, 0, 0, Direction::forward});
    REQUIRE(wait_done(t, *r));
    Message m = r->take();
    REQUIRE(m.tensors.size() == 1);
    CHECK(m.tensors[0].numel() == n);
    CHECK(m.tensors[0].data()[n - 1] == 0.5f + static_cast<float>(n - 1));
  }
  barrier();
}

TEST_CASE("mpi transport: self-sends are moved through a local mailbox (zero-copy, any order)") {
  MpiTransport t(world(), 2, 2);
  const int me = world().rank();
  Message a = filled({{8}}, 1.0f), b = filled({{8}}, 2.0f);
  const float* pa = a.tensors[0].data();
  const uint64_t e0 = t.progress_epoch(me);
  CHECK(t.isend(me, me, {0, 0, 0, Direction::forward}, std::move(a))->test());
  CHECK(t.isend(me, me, {0, 0, 1, Direction::forward}, std::move(b))->test());
  CHECK(t.progress_epoch(me) == e0 + 2);
  CHECK(t.self_buffered() == 2);
  auto r1 = t.irecv(me, me, {0, 0, 1, Direction::forward});
  auto r0 = t.irecv(me, me, {0, 0, 0, Direction::forward});
  auto missing = t.irecv(me, me, {0, 1, 0, Direction::forward});
  REQUIRE(r1->test());
  REQUIRE(r0->test());
  CHECK(!missing->test());
  Message m0 = r0->take();
  CHECK(m0.tensors[0].data() == pa);
  CHECK(r1->take().tensors[0].data()[0] == 2.0f);
  CHECK(t.self_buffered() == 0);
}

TEST_CASE("mpi transport: a wait times out at its deadline, cancel() makes it throw, a dropped receive frees its tag") {
  REQUIRE(world().size() >= 2);
  MpiTransport t(world(), 2, 2);
  const int me = world().rank();
  if (me == 1) {
    {
      auto r = t.irecv(1, 0, {0, 0, 1, Direction::forward});
      const uint64_t e = t.progress_epoch(1);
      CHECK(!r->test());
      CHECK_FALSE(t.wait_for_progress(1, e, Clock::now() + std::chrono::milliseconds(20)));
      t.cancel();
      CHECK(t.cancelled());
      CHECK_THROWS_AS(t.wait_for_progress(1, e, Clock::now() + kWait), TransportCancelled);
      t.reset();
      CHECK(!t.cancelled());
    }  // the receive is dropped unmatched (cancelled inside MPI)
  }
  barrier();
  // The same tag carries a new message to a new receive.
  if (me == 0) {
    auto s = t.isend(0, 1, {0, 0, 1, Direction::forward}, filled({{3}}, 9.0f));
    CHECK(wait_done(t, *s));
  } else if (me == 1) {
    auto r = t.irecv(1, 0, {0, 0, 1, Direction::forward});
    REQUIRE(wait_done(t, *r));
    CHECK(r->take().tensors[0].data()[2] == 11.0f);
  }
  barrier();
}

TEST_CASE("mpi world: send_bytes / recv_bytes carry any size in chunks, in order, empty included") {
  REQUIRE(world().size() >= 2);
  const int last = world().size() - 1;
  std::string big(1000, '\0');
  for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<char>(k * 31 + 7);
  const auto deadline = Clock::now() + kWait;
  // Every other rank sends rank 0 four messages: 1000 bytes in chunks of 7 (the last one
  // short), an empty one, its rank, and the 1000 bytes again (received into a buffer), which
  // must arrive in that order.
  if (world().rank() != 0) {
    world().send_bytes(0, big, deadline, "test bytes", 7);
    world().send_bytes(0, "", deadline, "test bytes", 7);
    world().send_bytes(0, std::to_string(world().rank()), deadline, "test bytes", 7);
    world().send_bytes(0, big, deadline, "test bytes", 7);
  } else {
    for (int src = last; src >= 1; --src) {  // any order of senders
      CAPTURE(src);
      CHECK(world().recv_bytes(src, deadline, "test bytes", 7) == big);
      CHECK(world().recv_bytes(src, deadline, "test bytes", 7).empty());
      CHECK(world().recv_bytes(src, deadline, "test bytes", 7) == std::to_string(src));
      std::string into(big.size(), 'x');
      world().recv_bytes_into(src, into.data(), into.size(), deadline, "test bytes", 7);
      CHECK(into == big);
    }
  }
  barrier();
}

// A receive given up at its deadline is cancelled (World::wait): the next message from that
// rank goes to the next receive. Left posted, the dead receive took the next message's length
// into a stack variable that was gone, and the next recv_bytes read the payload as a length.
TEST_CASE("mpi world: a recv_bytes that timed out leaves nothing posted, the next one gets the next message") {
  auto& w = world();
  if (w.rank() == 1) {
    CHECK_THROWS_AS(w.recv_bytes(0, Clock::now() + std::chrono::milliseconds(50), "a receive that times out"),
                    mpi::TransportTimeout);
  }
  w.barrier(Clock::now() + kWait, "after the timed-out receive");
  if (w.rank() == 0 && w.size() > 1) {
    w.send_bytes(1, "first message", Clock::now() + kWait, "the first send");
    w.send_bytes(1, "second message", Clock::now() + kWait, "the second send");
  } else if (w.rank() == 1) {
    CHECK(w.recv_bytes(0, Clock::now() + kWait, "the first receive") == "first message");
    CHECK(w.recv_bytes(0, Clock::now() + kWait, "the second receive") == "second message");
  }
  w.barrier(Clock::now() + kWait, "after the messages");
}
