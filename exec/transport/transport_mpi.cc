#include "exec/transport/transport_mpi.h"

#include <algorithm>
#include <climits>
#include <map>
#include <thread>

#include "exec/device_ops.h"
#include "exec/transport/mpi_comms.h"
#include "models/error.h"

namespace pw::exec {

namespace {

int64_t ns_of(Transport::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI transport: ") + what + " failed");
}

}  // namespace

class MpiRequestBase;

struct MpiTransport::Impl {
  // Requests whose owner went away before MPI finished with them (a cancelled run): their
  // buffers must live until MPI is done, so they are kept here and tested on every wait.
  struct Orphan {
    std::vector<MPI_Request> reqs;
    Message msg;
    std::vector<int64_t> header;
  };
  mpi::World& world;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1, stages = 1, micro_batches = 1, window = 1;
  int collective_slots = 0;  // per stage and iteration, in the all-reduce block
  bool collectives = false;
  std::chrono::nanoseconds spin;
  int64_t epoch_ns = 0;
  uint64_t epoch = 0;
  bool cancelled = false;
  std::map<MessageTag, Message> mailbox;  // self-sends
  std::vector<MpiRequestBase*> live;
  std::vector<Orphan> orphans;

  Impl(mpi::World& w, std::chrono::nanoseconds s) : world(w), spin(s) {}
  ~Impl();
  bool poll_all();
  void poll_orphans();
};

class MpiRequestBase : public Request {
 public:
  explicit MpiRequestBase(MpiTransport::Impl* t) : t_(t) { t_->live.push_back(this); }
  ~MpiRequestBase() override {
    auto& v = t_->live;
    v.erase(std::find(v.begin(), v.end(), this));
  }
  // Advances the request; true when its state changed.
  virtual bool poll() = 0;
  bool test() override {
    poll();
    return done_;
  }
  bool done() const { return done_; }

 protected:
  MpiTransport::Impl* t_;
  bool done_ = false;
};

namespace {

bool test_all(std::vector<MPI_Request>& reqs) {
  if (reqs.empty()) return true;
  int flag = 0;
  check_mpi(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
  return flag != 0;
}

// Device tensors are sent from host copies: each is downloaded (copy_to_host waits for the
// tensor's stream, where the sender queued the work that made it, so the fence is passed too)
// and the device buffer is released on the sending thread, which owns its stream.
void stage_to_host(Message& msg) {
  for (Tensor& x : msg.tensors) {
    if (!x.empty() && !x.device().is_cpu()) x = host_copy(x);
  }
  msg.fence.reset();
}

class SendRequest final : public MpiRequestBase {
 public:
  SendRequest(MpiTransport::Impl* t, int dst, int tag, Message msg) : MpiRequestBase(t), msg_(std::move(msg)) {
    stage_to_host(msg_);
    header_ = {msg_.weight_version, msg_.send_time_ns - t_->epoch_ns, static_cast<int64_t>(msg_.tensors.size())};
    for (const Tensor& x : msg_.tensors) {
      header_.push_back(static_cast<int64_t>(x.shape().size()));
      header_.insert(header_.end(), x.shape().begin(), x.shape().end());
    }
    PW_CHECK(header_.size() <= static_cast<size_t>(MpiTransport::kMaxHeaderWords),
             "MPI transport: message header of " + std::to_string(header_.size()) + " words exceeds the limit");
    reqs_.resize(1 + msg_.tensors.size());
    check_mpi(MPI_Isend(header_.data(), static_cast<int>(header_.size()), MPI_INT64_T, dst, tag, t_->comm, &reqs_[0]),
              "MPI_Isend (header)");
    for (size_t k = 0; k < msg_.tensors.size(); ++k) {
      Tensor& x = msg_.tensors[k];
      PW_CHECK(x.numel() < INT_MAX, "MPI transport: tensor of " + x.shape_string() + " is too large for one message");
      check_mpi(MPI_Isend(x.data(), static_cast<int>(x.numel()), MPI_FLOAT, dst, tag, t_->comm, &reqs_[k + 1]),
                "MPI_Isend (payload)");
    }
  }
  ~SendRequest() override {
    if (!done_ && !test_all(reqs_))
      t_->orphans.push_back(MpiTransport::Impl::Orphan{std::move(reqs_), std::move(msg_), std::move(header_)});
  }
  bool poll() override {
    if (done_) return false;
    done_ = test_all(reqs_);
    return done_;
  }
  Message take() override {
    PW_CHECK(false, "take() called on a send request");
    return {};
  }

 private:
  Message msg_;
  std::vector<int64_t> header_;
  std::vector<MPI_Request> reqs_;
};

class RecvRequest final : public MpiRequestBase {
 public:
  RecvRequest(MpiTransport::Impl* t, int src, int tag, const MessageTag& mtag)
      : MpiRequestBase(t), src_(src), tag_(tag), mtag_(mtag), header_(MpiTransport::kMaxHeaderWords) {
    reqs_.resize(1);
    check_mpi(MPI_Irecv(header_.data(), MpiTransport::kMaxHeaderWords, MPI_INT64_T, src_, tag_, t_->comm, &reqs_[0]),
              "MPI_Irecv (header)");
  }
  ~RecvRequest() override {
    if (done_) return;
    for (MPI_Request& r : reqs_)
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    if (!test_all(reqs_))
      t_->orphans.push_back(MpiTransport::Impl::Orphan{std::move(reqs_), std::move(msg_), std::move(header_)});
  }
  bool poll() override {
    if (done_) return false;
    bool changed = false;
    if (!have_header_) {
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Test(&reqs_[0], &flag, &st), "MPI_Test (header)");
      if (!flag) return false;
      int words = 0;
      MPI_Get_count(&st, MPI_INT64_T, &words);
      parse_header(words);
      have_header_ = changed = true;
      reqs_.assign(msg_.tensors.size(), MPI_REQUEST_NULL);
      for (size_t k = 0; k < msg_.tensors.size(); ++k) {
        Tensor& x = msg_.tensors[k];
        check_mpi(MPI_Irecv(x.data(), static_cast<int>(x.numel()), MPI_FLOAT, src_, tag_, t_->comm, &reqs_[k]),
                  "MPI_Irecv (payload)");
      }
    }
    if (test_all(reqs_)) done_ = changed = true;
    return changed;
  }
  Message take() override {
    PW_CHECK(done_ && !taken_, "take() before completion or twice");
    taken_ = true;
    return std::move(msg_);
  }

 private:
  void parse_header(int words) {
    PW_CHECK(words >= 3, "MPI transport: short header for " + to_string(mtag_));
    size_t at = 0;
    auto next = [&] {
      PW_CHECK(at < static_cast<size_t>(words), "MPI transport: truncated header for " + to_string(mtag_));
      return header_[at++];
    };
    msg_.weight_version = next();
    msg_.send_time_ns = next() + t_->epoch_ns;
    const int64_t n = next();
    for (int64_t k = 0; k < n; ++k) {
      std::vector<int64_t> shape(static_cast<size_t>(next()));
      for (int64_t& d : shape) d = next();
      msg_.tensors.emplace_back(std::move(shape));
    }
  }

  int src_, tag_;
  MessageTag mtag_;
  std::vector<int64_t> header_;
  std::vector<MPI_Request> reqs_;
  Message msg_;
  bool have_header_ = false;
  bool taken_ = false;
};

class SelfSend final : public MpiRequestBase {
 public:
  explicit SelfSend(MpiTransport::Impl* t) : MpiRequestBase(t) { done_ = true; }
  bool poll() override { return false; }
  Message take() override {
    PW_CHECK(false, "take() called on a send request");
    return {};
  }
};

class SelfRecv final : public MpiRequestBase {
 public:
  SelfRecv(MpiTransport::Impl* t, const MessageTag& tag) : MpiRequestBase(t), tag_(tag) {}
  bool poll() override {
    if (done_) return false;
    auto it = t_->mailbox.find(tag_);
    if (it == t_->mailbox.end()) return false;
    msg_ = std::move(it->second);
    t_->mailbox.erase(it);
    done_ = true;
    return true;
  }
  Message take() override {
    PW_CHECK(done_ && !taken_, "take() before completion or twice");
    taken_ = true;
    return std::move(msg_);
  }

 private:
  MessageTag tag_;
  Message msg_;
  bool taken_ = false;
};

}  // namespace

MpiTransport::Impl::~Impl() {
  poll_orphans();
  // Still in flight after the run ended (a peer is gone): MPI may yet touch these buffers, so
  // they are leaked rather than freed.
  for (Orphan& o : orphans) {
    for (MPI_Request& r : o.reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    new Orphan(std::move(o));
  }
}

bool MpiTransport::Impl::poll_all() {
  bool changed = false;
  for (MpiRequestBase* r : live) changed = r->poll() || changed;
  poll_orphans();
  return changed;
}

void MpiTransport::Impl::poll_orphans() {
  for (size_t i = 0; i < orphans.size();) {
    if (test_all(orphans[i].reqs)) {
      orphans[i] = std::move(orphans.back());
      orphans.pop_back();
    } else {
      ++i;
    }
  }
}

MpiTransport::MpiTransport(mpi::World& world, int num_stages, int num_micro_batches, std::chrono::nanoseconds spin,
                           bool collectives)
    : impl_(std::make_unique<Impl>(world, spin)) {
  PW_CHECK(num_stages >= 1 && num_micro_batches >= 1, "MPI transport needs >= 1 stage and micro-batch");
  Impl& t = *impl_;
  t.comm = world.comms().data;
  t.rank = world.rank();
  t.size = world.size();
  t.stages = num_stages;
  t.micro_batches = num_micro_batches;
  t.collectives = collectives;
  t.collective_slots = collectives ? std::max(num_micro_batches, t.size) : 0;
  const int64_t per_iteration = 2LL * num_stages * (num_micro_batches + t.collective_slots);
  const int64_t window = std::min<int64_t>(1024, (static_cast<int64_t>(world.tag_upper_bound()) + 1) / per_iteration);
  if (window < 4)
    throw InputError("MPI transport: " + std::to_string(num_stages) + " stages x " + std::to_string(num_micro_batches) +
                     " micro-batches need " + std::to_string(4 * per_iteration) + " MPI tags, but MPI_TAG_UB is " +
                     std::to_string(world.tag_upper_bound()));
  t.window = static_cast<int>(window);
  t.epoch_ns = ns_of(Clock::now());
}

MpiTransport::~MpiTransport() = default;

int MpiTransport::num_endpoints() const { return impl_->size; }
int MpiTransport::iteration_window() const { return impl_->window; }
int MpiTransport::collective_slots() const { return impl_->collective_slots; }
void MpiTransport::set_epoch(Clock::time_point t0) { impl_->epoch_ns = ns_of(t0); }
size_t MpiTransport::self_buffered() const { return impl_->mailbox.size(); }

int MpiTransport::mpi_tag(const MessageTag& tag) const {
  const Impl& t = *impl_;
  const bool p2p_tag = tag.dir == Direction::forward || tag.dir == Direction::backward;
  PW_CHECK(p2p_tag || t.collectives, "MPI transport: collective tag without collectives: " + to_string(tag));
  const int width = p2p_tag ? t.micro_batches : t.collective_slots;
  PW_CHECK(
      tag.iteration >= 0 && tag.stage >= 0 && tag.stage < t.stages && tag.micro_batch >= 0 && tag.micro_batch < width,
      "MPI transport: tag out of range: " + to_string(tag));
  const int64_t it = tag.iteration % t.window;
  const int64_t slot = (it * t.stages + tag.stage) * width + tag.micro_batch;
  if (p2p_tag) return static_cast<int>(slot * 2 + (tag.dir == Direction::backward ? 1 : 0));
  const int64_t p2p = static_cast<int64_t>(t.window) * 2 * t.stages * t.micro_batches;
  return static_cast<int>(p2p + slot * 2 + (tag.dir == Direction::broadcast ? 1 : 0));
}

std::unique_ptr<Request> MpiTransport::isend(int src, int dst, const MessageTag& tag, Message msg) {
  Impl& t = *impl_;
  PW_CHECK(src == t.rank,
           "MPI transport: rank " + std::to_string(t.rank) + " cannot send as endpoint " + std::to_string(src));
  PW_CHECK(dst >= 0 && dst < t.size, "MPI transport: destination out of range: " + std::to_string(dst));
  const int mtag = mpi_tag(tag);
  if (dst == t.rank) {
    PW_CHECK(t.mailbox.count(tag) == 0, "duplicate self-message " + to_string(tag));
    t.mailbox.emplace(tag, std::move(msg));
    ++t.epoch;
    return std::make_unique<SelfSend>(&t);
  }
  auto r = std::make_unique<SendRequest>(&t, dst, mtag, std::move(msg));
  r->poll();
  return r;
}

std::unique_ptr<Request> MpiTransport::irecv(int dst, int src, const MessageTag& tag) {
  Impl& t = *impl_;
  PW_CHECK(dst == t.rank,
           "MPI transport: rank " + std::to_string(t.rank) + " cannot receive as endpoint " + std::to_string(dst));
  PW_CHECK(src >= 0 && src < t.size, "MPI transport: source out of range: " + std::to_string(src));
  const int mtag = mpi_tag(tag);
  if (src == t.rank) return std::make_unique<SelfRecv>(&t, tag);
  return std::make_unique<RecvRequest>(&t, src, mtag, tag);
}

uint64_t MpiTransport::progress_epoch(int endpoint) const {
  PW_CHECK(endpoint == impl_->rank,
           "MPI transport: rank " + std::to_string(impl_->rank) + " asked about endpoint " + std::to_string(endpoint));
  return impl_->epoch;
}

bool MpiTransport::wait_for_progress(int endpoint, uint64_t seen_epoch, Clock::time_point deadline) {
  Impl& t = *impl_;
  PW_CHECK(endpoint == t.rank,
           "MPI transport: rank " + std::to_string(t.rank) + " waits as endpoint " + std::to_string(endpoint));
  const auto start = Clock::now();
  auto backoff = std::chrono::microseconds(10);
  while (true) {
    if (t.cancelled) throw TransportCancelled("transport cancelled");
    t.world.check_peers();
    if (t.poll_all()) ++t.epoch;
    if (t.epoch != seen_epoch) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now - start < t.spin) continue;
    std::this_thread::sleep_until(std::min(deadline, now + backoff));
    backoff = std::min(backoff * 2, std::chrono::microseconds(200));
  }
}

void MpiTransport::cancel() { impl_->cancelled = true; }
bool MpiTransport::cancelled() const { return impl_->cancelled; }

void MpiTransport::reset() {
  impl_->mailbox.clear();
  impl_->cancelled = false;
}

}  // namespace pw::exec
