#include "exec/transport/transport_inproc.h"

#include <thread>

#include "models/error.h"

namespace pw::exec {

std::string to_string(const MessageTag& tag) {
  return "it " + std::to_string(tag.iteration) + " stage " + std::to_string(tag.stage) + " mb " +
         std::to_string(tag.micro_batch) +
         (tag.dir == Direction::forward    ? " fwd"
          : tag.dir == Direction::backward ? " bwd"
          : tag.dir == Direction::reduce   ? " reduce"
                                           : " bcast");
}

class InProcTransport::SendRequest final : public Request {
 public:
  SendRequest(InProcTransport* t, int src, int dst, const MessageTag& tag, Message msg)
      : t_(t), src_(src), dst_(dst), tag_(tag), msg_(std::move(msg)) {}
  bool test() override {
    if (!done_) done_ = t_->try_deposit(src_, dst_, tag_, msg_);
    return done_;
  }
  Message take() override {
    PW_CHECK(false, "take() called on a send request");
    return {};
  }

 private:
  InProcTransport* t_;
  int src_, dst_;
  MessageTag tag_;
  Message msg_;
  bool done_ = false;
};

class InProcTransport::RecvRequest final : public Request {
 public:
  RecvRequest(InProcTransport* t, int dst, int src, const MessageTag& tag) : t_(t), dst_(dst), src_(src), tag_(tag) {
    t_->post(dst_, src_, tag_);
  }
  bool test() override {
    if (!done_) done_ = t_->try_take(dst_, src_, tag_, &msg_);
    return done_;
  }
  Message take() override {
    PW_CHECK(done_ && !taken_, "take() before completion or twice");
    taken_ = true;
    return std::move(msg_);
  }

 private:
  InProcTransport* t_;
  int dst_, src_;
  MessageTag tag_;
  Message msg_;
  bool done_ = false;
  bool taken_ = false;
};

InProcTransport::InProcTransport(int num_endpoints, int capacity, std::chrono::nanoseconds spin)
    : capacity_(capacity), spin_(spin) {
  PW_CHECK(num_endpoints >= 1, "transport needs at least one endpoint");
  PW_CHECK(capacity >= 1, "channel capacity must be >= 1");
  for (int e = 0; e < num_endpoints; ++e) {
    eps_.push_back(std::make_unique<Endpoint>());
    eps_.back()->unexpected_from.assign(num_endpoints, 0);
  }
}

InProcTransport::~InProcTransport() = default;

void InProcTransport::check_endpoint(int e, const char* what) const {
  PW_CHECK(e >= 0 && e < num_endpoints(), std::string(what) + " endpoint out of range: " + std::to_string(e));
}

std::unique_ptr<Request> InProcTransport::isend(int src, int dst, const MessageTag& tag, Message msg) {
  check_endpoint(src, "source");
  check_endpoint(dst, "destination");
  auto r = std::make_unique<SendRequest>(this, src, dst, tag, std::move(msg));
  r->test();
  return r;
}

std::unique_ptr<Request> InProcTransport::irecv(int dst, int src, const MessageTag& tag) {
  check_endpoint(src, "source");
  check_endpoint(dst, "destination");
  return std::make_unique<RecvRequest>(this, dst, src, tag);
}

bool InProcTransport::try_deposit(int src, int dst, const MessageTag& tag, Message& msg) {
  Endpoint& ep = *eps_[dst];
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    const Key key{src, tag};
    const bool matched = ep.posted.count(key) > 0;
    if (!matched && ep.unexpected_from[src] >= capacity_) return false;
    PW_CHECK(ep.arrived.count(key) == 0,
             "duplicate message " + to_string(tag) + " from endpoint " + std::to_string(src));
    ep.arrived.emplace(key, Slot{std::move(msg), !matched});
    if (!matched) ++ep.unexpected_from[src];
    ep.epoch.fetch_add(1, std::memory_order_release);
  }
  ep.cv.notify_all();
  return true;
}

bool InProcTransport::try_take(int dst, int src, const MessageTag& tag, Message* out) {
  Endpoint& ep = *eps_[dst];
  bool freed = false;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    const Key key{src, tag};
    auto it = ep.arrived.find(key);
    if (it == ep.arrived.end()) return false;
    *out = std::move(it->second.msg);
    if (it->second.unexpected) {
      --ep.unexpected_from[src];
      freed = true;
    }
    ep.arrived.erase(it);
    ep.posted.erase(key);
  }
  if (freed && src != dst) bump(src);
  return true;
}

void InProcTransport::post(int dst, int src, const MessageTag& tag) {
  Endpoint& ep = *eps_[dst];
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    const Key key{src, tag};
    if (ep.arrived.count(key)) return;
    ep.posted.insert(key);
  }
  // The sender may hold this message pending on a full channel: let it retry.
  if (src != dst) bump(src);
}

void InProcTransport::bump(int endpoint) {
  Endpoint& ep = *eps_[endpoint];
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    ep.epoch.fetch_add(1, std::memory_order_release);
  }
  ep.cv.notify_all();
}

uint64_t InProcTransport::progress_epoch(int endpoint) const {
  check_endpoint(endpoint, "waiting");
  return eps_[endpoint]->epoch.load(std::memory_order_acquire);
}

bool InProcTransport::wait_for_progress(int endpoint, uint64_t seen_epoch, Clock::time_point deadline) {
  check_endpoint(endpoint, "waiting");
  Endpoint& ep = *eps_[endpoint];
  const auto spin_until = std::min(deadline, Clock::now() + spin_);
  while (Clock::now() < spin_until) {
    if (cancelled()) throw TransportCancelled("transport cancelled");
    if (ep.epoch.load(std::memory_order_acquire) != seen_epoch) return true;
    std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(ep.mu);
  const bool woke = ep.cv.wait_until(
      lock, deadline, [&] { return cancelled() || ep.epoch.load(std::memory_order_acquire) != seen_epoch; });
  if (cancelled()) throw TransportCancelled("transport cancelled");
  return woke;
}

void InProcTransport::cancel() {
  cancelled_.store(true, std::memory_order_release);
  for (int e = 0; e < num_endpoints(); ++e) bump(e);
}

void InProcTransport::reset() {
  for (auto& ep : eps_) {
    std::lock_guard<std::mutex> lock(ep->mu);
    ep->arrived.clear();
    ep->posted.clear();
    std::fill(ep->unexpected_from.begin(), ep->unexpected_from.end(), 0);
  }
  cancelled_.store(false, std::memory_order_release);
}

size_t InProcTransport::buffered(int dst) const {
  check_endpoint(dst, "destination");
  std::lock_guard<std::mutex> lock(eps_[dst]->mu);
  return eps_[dst]->arrived.size();
}

int InProcTransport::unexpected(int src, int dst) const {
  check_endpoint(src, "source");
  check_endpoint(dst, "destination");
  std::lock_guard<std::mutex> lock(eps_[dst]->mu);
  return eps_[dst]->unexpected_from[src];
}

}  // namespace pw::exec
