#include "exec/runtime/replica_allreduce.h"

#include <algorithm>
#include <chrono>

#include "exec/device_ops.h"
#include "models/error.h"

namespace pw::exec {

RingAllreduce::RingAllreduce(Transport& tr, int device, std::vector<int> replicas, int iteration, int stage, int round,
                             std::vector<Tensor*> grads, bool average, int64_t flat_begin, int64_t flat_end)
    : tr_(tr),
      device_(device),
      iteration_(iteration),
      stage_(stage),
      round_(round),
      grads_(std::move(grads)),
      average_(average) {
  const auto me = std::find(replicas.begin(), replicas.end(), device);
  PW_CHECK(me != replicas.end(), "all-reduce of stage " + std::to_string(stage) + " on device " +
                                     std::to_string(device) + ", which is not one of its replicas");
  r_ = static_cast<int>(replicas.size());
  if (r_ < 2) return;  // steps_ == 0: done
  pos_ = static_cast<int>(me - replicas.begin());
  prev_ = replicas[(pos_ + r_ - 1) % r_];
  next_ = replicas[(pos_ + 1) % r_];
  for (const Tensor* g : grads_) total_ += g->numel();
  flat_begin_ = flat_begin;
  flat_end_ = flat_end < 0 ? total_ : flat_end;
  PW_CHECK(0 <= flat_begin_ && flat_begin_ <= flat_end_ && flat_end_ <= total_,
           "all-reduce of stage " + std::to_string(stage) + ": bucket [" + std::to_string(flat_begin_) + ", " +
               std::to_string(flat_end_) + ") outside the " + std::to_string(total_) + " gradient values");
  steps_ = 2 * (r_ - 1);
  stage_to_host();
  start_step();
}

void RingAllreduce::stage_to_host() {
  size_t on_device = 0;
  for (const Tensor* g : grads_) on_device += g->device().is_cpu() ? 0 : 1;
  if (on_device == 0) return;
  staged_.reserve(on_device);  // grads_ points into it
  int64_t base = 0;
  for (Tensor*& g : grads_) {
    const int64_t first = base, end = base + g->numel();
    base = end;
    if (g->device().is_cpu() || end <= flat_begin_ || first >= flat_end_ || first == end) continue;
    PW_CHECK(first >= flat_begin_ && end <= flat_end_,
             "all-reduce of stage " + std::to_string(stage_) + ": a device gradient straddles the bucket [" +
                 std::to_string(flat_begin_) + ", " + std::to_string(flat_end_) + ")");
    staged_.push_back(host_copy(*g));
    staged_from_.push_back(g);
    g = &staged_.back();
  }
}

void RingAllreduce::upload_staged() {
  for (size_t k = 0; k < staged_.size(); ++k) copy_from_host(staged_[k].data(), *staged_from_[k]);
}

MessageTag RingAllreduce::tag_of(int step) const {
  const bool gather = step >= r_ - 1;
  return MessageTag{iteration_, stage_, round_ * (r_ - 1) + (gather ? step - (r_ - 1) : step),
                    gather ? Direction::broadcast : Direction::reduce};
}

int RingAllreduce::send_chunk(int step) const {
  const int t = step < r_ - 1 ? step : step - (r_ - 1);
  return step < r_ - 1 ? (pos_ - t + r_) % r_ : (pos_ + 1 - t + r_) % r_;
}

int RingAllreduce::recv_chunk(int step) const {
  const int t = step < r_ - 1 ? step : step - (r_ - 1);
  return step < r_ - 1 ? (pos_ - t - 1 + 2 * r_) % r_ : (pos_ - t + r_) % r_;
}

int64_t RingAllreduce::chunk_begin(int chunk) const {
  return std::min(std::max(total_ * chunk / r_, flat_begin_), flat_end_);
}

int64_t RingAllreduce::chunk_end(int chunk) const {
  return std::max(std::min(total_ * (chunk + 1) / r_, flat_end_), chunk_begin(chunk));
}

template <typename F>
void RingAllreduce::for_chunk(int chunk, F&& f) {
  const int64_t begin = chunk_begin(chunk), end = chunk_end(chunk);
  if (begin == end) return;
  int64_t base = 0;  // flat index of the current tensor's first element
  for (Tensor* g : grads_) {
    const int64_t lo = std::max(begin, base), hi = std::min(end, base + g->numel());
    if (lo < hi) f(g->data() + (lo - base), hi - lo, lo - begin);
    base += g->numel();
    if (base >= end) break;
  }
}

void RingAllreduce::start_step() {
  const int c = send_chunk(step_);
  const int64_t n = chunk_end(c) - chunk_begin(c);
  Message m;
  if (n > 0) {
    Tensor t(std::vector<int64_t>{n});
    for_chunk(c, [&](const float* src, int64_t len, int64_t off) { std::copy(src, src + len, t.data() + off); });
    m.tensors.push_back(std::move(t));
  }
  m.send_time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Transport::Clock::now().time_since_epoch()).count();
  auto send = tr_.isend(device_, next_, tag_of(step_), std::move(m));
  if (!send->test()) sends_.emplace_back(std::move(send), tag_of(step_));
  recv_tag_ = tag_of(step_);
  recv_ = tr_.irecv(device_, prev_, recv_tag_);
}

void RingAllreduce::apply(const Message& m) {
  const int c = recv_chunk(step_);
  const int64_t n = chunk_end(c) - chunk_begin(c);
  const int64_t got = m.tensors.empty() ? 0 : m.tensors[0].numel();
  PW_CHECK(m.tensors.size() <= 1 && got == n, "all-reduce " + to_string(recv_tag_) + ": device " +
                                                  std::to_string(prev_) + " sent " + std::to_string(got) +
                                                  " values of chunk " + std::to_string(c) + ", expected " +
                                                  std::to_string(n) + " (the replicas' gradients differ in size)");
  if (n == 0) return;
  const float* s = m.tensors[0].data();
  if (step_ < r_ - 1) {
    for_chunk(c, [&](float* d, int64_t len, int64_t off) {
      for (int64_t e = 0; e < len; ++e) d[e] += s[off + e];
    });
  } else {
    for_chunk(c, [&](float* d, int64_t len, int64_t off) { std::copy(s + off, s + off + len, d); });
  }
}

bool RingAllreduce::progress() {
  while (step_ < steps_ && recv_->test()) {
    apply(recv_->take());
    recv_.reset();
    ++step_;
    if (step_ == r_ - 1 && average_) {
      const float r = static_cast<float>(r_);
      for_chunk((pos_ + 1) % r_, [&](float* d, int64_t len, int64_t) {
        for (int64_t e = 0; e < len; ++e) d[e] /= r;
      });
    }
    if (step_ < steps_) start_step();
    if (step_ == steps_) upload_staged();  // the result is complete: back onto the device
  }
  std::erase_if(sends_, [](auto& s) { return s.first->test(); });
  return done();
}

Request& RingAllreduce::waiting() {
  PW_CHECK(!done(), "waiting() on a finished all-reduce");
  return step_ < steps_ ? *recv_ : *sends_.front().first;
}

MessageTag RingAllreduce::waiting_tag() const { return step_ < steps_ ? recv_tag_ : sends_.front().second; }

int RingAllreduce::waiting_peer() const { return step_ < steps_ ? prev_ : next_; }

namespace {

// What the blocking form waits on: the whole ring, complete when the ring is done. Testing it
// progresses the ring, its own pending sends included. Waiting on the ring's next receive alone
// is not enough: a send left pending on a full channel is retried only by progress(), and the
// chunk awaited may depend on it (three replicas: A's pending send to B holds up B's send to C,
// C's to A), so a wait that tests only its request would hang.
class WholeRing final : public Request {
 public:
  explicit WholeRing(RingAllreduce& ring) : ring_(ring) {}
  bool test() override { return ring_.progress(); }
  Message take() override {
    PW_CHECK(false, "take() called on an all-reduce");
    return {};
  }

 private:
  RingAllreduce& ring_;
};

}  // namespace

void replica_allreduce(Transport& tr, int device, const std::vector<int>& replicas, int iteration, int stage, int round,
                       const std::vector<Tensor*>& grads, bool average, const RequestWait& wait, int64_t flat_begin,
                       int64_t flat_end) {
  RingAllreduce ring(tr, device, replicas, iteration, stage, round, grads, average, flat_begin, flat_end);
  WholeRing whole(ring);
  while (!ring.progress()) wait(whole, ring.waiting_tag(), ring.waiting_peer());
}

}  // namespace pw::exec
