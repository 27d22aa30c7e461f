#include "exec/runtime/rank_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/runtime/run_checkpoint.h"
#include "models/error.h"

namespace pw::exec {

namespace {

using Clock = mpi::World::Clock;

class Bytes {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  int64_t i64() {
    int64_t v;
    raw(&v, sizeof v);
    return v;
  }
  void raw(void* p, size_t n) {
    PW_CHECK(at_ + n <= s_.size(), "a stage message between ranks is truncated");
    std::memcpy(p, s_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  size_t at_ = 0;
};

// A stage's state as the header of its message: counters, then each tensor's name and shape.
std::string stage_header(const StageState& st) {
  Bytes b;
  b.i64(st.optimizer_steps);
  b.i64(st.weight_version);
  b.i64(static_cast<int64_t>(st.tensors.size()));
  for (const auto& [name, t] : st.tensors) {
    b.i64(static_cast<int64_t>(name.size()));
    b.raw(name.data(), name.size());
    b.i64(static_cast<int64_t>(t->shape().size()));
    for (int64_t d : t->shape()) b.i64(d);
  }
  return b.take();
}

void send_values(const StageState& st, int dst, mpi::World& world, Clock::time_point deadline,
                 const std::string& what) {
  for (const auto& [name, t] : st.tensors)
    world.send_bytes(dst, std::string_view(reinterpret_cast<const char*>(t->data()), static_cast<size_t>(t->bytes())),
                     deadline, what);
}

void receive_values(StageState& st, int src, mpi::World& world, Clock::time_point deadline, const std::string& what) {
  for (auto& [name, t] : st.tensors)
    world.recv_bytes_into(src, t->data(), static_cast<size_t>(t->bytes()), deadline, what);
}

// A stage another rank described (stage_header): owned tensors and counters.
struct ReceivedStage {
  NamedTensors tensors;
  int64_t optimizer_steps = 0;
  int64_t weight_version = 0;

  // The checkpoint's view of it; points into `tensors`, so valid while this lives unchanged.
  StageState state() {
    StageState st;
    st.optimizer_steps = optimizer_steps;
    st.weight_version = weight_version;
    for (auto& [name, t] : tensors) st.tensors.emplace_back(name, &t);
    return st;
  }
};

// The tensors (allocated, values unset) and counters a stage_header describes.
ReceivedStage parse_header(const std::string& header) {
  Reader r(header);
  ReceivedStage d;
  d.optimizer_steps = r.i64();
  d.weight_version = r.i64();
  const int64_t n = r.i64();
  for (int64_t k = 0; k < n; ++k) {
    std::string name(static_cast<size_t>(r.i64()), '\0');
    r.raw(name.data(), name.size());
    std::vector<int64_t> shape(static_cast<size_t>(r.i64()));
    for (int64_t& dim : shape) dim = r.i64();
    d.tensors.emplace_back(std::move(name), Tensor(shape));
  }
  PW_CHECK(r.done(), "a sent stage header has bytes past its last tensor");
  return d;
}

// The ranks other than 0 that run stage s, in rank order.
std::vector<int> peers_of(const planner::Schedule& sch, int s, int ranks) {
  std::vector<int> peers;
  for (int r = 1; r < ranks; ++r)
    if (runs_stage(sch, s, r)) peers.push_back(r);
  return peers;
}

// The first failure of a rank in a protocol that must run to its end: later steps are skipped.
class FirstFailure {
 public:
  template <class F>
  bool attempt(F&& f) {
    if (failed_) return false;
    try {
      f();
      return true;
    } catch (const std::exception&) {
      failed_ = std::current_exception();
      return false;
    }
  }
  bool failed() const { return static_cast<bool>(failed_); }
  void rethrow() const {
    if (failed_) std::rethrow_exception(failed_);
  }

 private:
  std::exception_ptr failed_;
};

// Rank 0's part of resume_from_rank0 for stage s: load it (into its own stage, or into tensors
// shaped as the first peer's), then send each peer a status (loaded or not, counters, tensor
// count) and, when loaded, the values.
void load_and_send(LayerStageCompute& compute, const planner::Schedule& sch, int s, mpi::World& world,
                   const std::string& dir, const CheckpointInfo& info, Clock::time_point deadline, FirstFailure& fail) {
  const std::string what = "sending the checkpoint's stage " + std::to_string(s);
  const std::vector<int> peers = peers_of(sch, s, world.size());
  std::optional<HostStagedState> own;
  ReceivedStage received;
  StageState other;
  StageState* st = nullptr;
  if (runs_stage(sch, s, 0)) {
    if (fail.attempt([&] { own.emplace(compute.checkpoint_state(s)); })) st = &own->host();
  } else {
    PW_CHECK(!peers.empty(), "no rank runs stage " + std::to_string(s));
    const std::string header = world.recv_bytes(peers[0], deadline, what);
    if (!header.empty() && fail.attempt([&] { received = parse_header(header); })) {
      other = received.state();
      st = &other;
    }
  }
  const bool loaded = st && fail.attempt([&] { load_stage(dir, info, s, *st); });
  if (loaded && own)
    fail.attempt([&] {
      own->upload();
      compute.restore_counters(s, *st);
    });
  Bytes status;
  status.i64(loaded ? 1 : 0);
  status.i64(loaded ? st->optimizer_steps : 0);
  status.i64(loaded ? st->weight_version : 0);
  status.i64(loaded ? static_cast<int64_t>(st->tensors.size()) : 0);
  const std::string status_bytes = status.take();
  for (int peer : peers) {
    world.send_bytes(peer, status_bytes, deadline, what);
    if (loaded) send_values(*st, peer, world, deadline, what);
  }
}

// A peer's part for stage s: describe the stage (the first peer, when rank 0 does not run s),
// then take what rank 0 sends into it. A peer that failed earlier still drains the values.
void receive_and_load(LayerStageCompute& compute, const planner::Schedule& sch, int s, mpi::World& world,
                      Clock::time_point deadline, FirstFailure& fail) {
  const std::string what = "receiving the checkpoint's stage " + std::to_string(s);
  const std::vector<int> peers = peers_of(sch, s, world.size());
  std::optional<HostStagedState> own;
  fail.attempt([&] { own.emplace(compute.checkpoint_state(s)); });
  if (!runs_stage(sch, s, 0) && peers.front() == world.rank())
    world.send_bytes(0, own && !fail.failed() ? stage_header(own->host()) : std::string(), deadline, what);
  const std::string status = world.recv_bytes(0, deadline, what);
  Reader r(status);
  const bool loaded = r.i64() != 0;
  const int64_t steps = r.i64(), version = r.i64(), count = r.i64();
  if (!loaded) return;
  if (!own || fail.failed()) {
    for (int64_t k = 0; k < count; ++k) world.recv_bytes(0, deadline, what);
    return;
  }
  StageState& st = own->host();
  PW_CHECK(count == static_cast<int64_t>(st.tensors.size()), "rank 0 sent stage " + std::to_string(s) + " with " +
                                                                 std::to_string(count) + " tensors, this rank has " +
                                                                 std::to_string(st.tensors.size()));
  receive_values(st, 0, world, deadline, what);
  st.optimizer_steps = steps;
  st.weight_version = version;
  fail.attempt([&] {
    own->upload();
    compute.restore_counters(s, st);
  });
}

// The resumed step and the data loader's position, from rank 0 to every rank.
void share_position(mpi::World& world, CheckpointInfo& info, Clock::time_point deadline) {
  const std::string what = "sending the checkpoint's step and data position";
  if (world.rank() == 0) {
    Bytes b;
    b.i64(info.step);
    b.i64(static_cast<int64_t>(info.data.rng));
    b.i64(info.data.batches);
    const std::string bytes = b.take();
    for (int r = 1; r < world.size(); ++r) world.send_bytes(r, bytes, deadline, what);
    return;
  }
  const std::string bytes = world.recv_bytes(0, deadline, what);
  Reader r(bytes);
  info.step = r.i64();
  info.data.rng = static_cast<uint64_t>(r.i64());
  info.data.batches = r.i64();
  PW_CHECK(r.done(), "the checkpoint's position from rank 0 has extra bytes");
}

}  // namespace

bool runs_stage(const planner::Schedule& sch, int s, int device) {
  if (sch.stage_replicas.empty()) return sch.stage_device[s] == device;
  const std::vector<int>& r = sch.stage_replicas[s];
  return std::find(r.begin(), r.end(), device) != r.end();
}

Clock::time_point rank0_turn_deadline(std::chrono::milliseconds timeout) {
  return Clock::now() + kRank0TurnWait + timeout;
}

void stages_to_rank0(LayerStageCompute& compute, const planner::Schedule& sch, mpi::World& world,
                     std::chrono::milliseconds timeout, const std::string& what,
                     const std::function<void(int, const StageState&)>& use) {
  const int rank = world.rank();
  const Clock::time_point sender_deadline = rank0_turn_deadline(timeout);
  for (int s = 0; s < compute.num_stages(); ++s) {
    const int owner = sch.stage_device[s];
    if (rank == 0 && owner == 0) {
      HostStagedState staged(compute.checkpoint_state(s));  // rank 0's own stage may be on its GPU
      staged.download();
      use(s, staged.host());
    } else if (rank == 0) {
      const Clock::time_point deadline = Clock::now() + timeout;  // the owner has been ready since the call
      ReceivedStage d = parse_header(world.recv_bytes(owner, deadline, what));
      StageState st = d.state();
      receive_values(st, owner, world, deadline, what);
      use(s, st);
    } else if (rank == owner) {
      HostStagedState staged(compute.checkpoint_state(s));  // host copies of a stage on a GPU
      staged.download();
      world.send_bytes(0, stage_header(staged.host()), sender_deadline, what);
      send_values(staged.host(), 0, world, sender_deadline, what);
    }
  }
}

void resume_from_rank0(LayerStageCompute& compute, const planner::Schedule& sch, mpi::World& world,
                       const std::string& dir, CheckpointInfo& info, Clock::time_point deadline) {
  share_position(world, info, deadline);
  FirstFailure fail;
  for (int s = 0; s < compute.num_stages(); ++s) {
    if (world.rank() == 0) load_and_send(compute, sch, s, world, dir, info, deadline, fail);
    else if (runs_stage(sch, s, world.rank())) receive_and_load(compute, sch, s, world, deadline, fail);
  }
  fail.rethrow();
}

}  // namespace pw::exec
