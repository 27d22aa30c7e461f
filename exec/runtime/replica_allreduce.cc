#include "exec/runtime/replica_allreduce.h"

#include <algorithm>
#include <chrono>

#include "models/error.h"

namespace pw::exec {

namespace {

Message copy_of(const std::vector<Tensor*>& grads) {
  Message m;
  for (const Tensor* g : grads) m.tensors.push_back(g->clone());
  m.send_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       Transport::Clock::now().time_since_epoch())
                       .count();
  return m;
}

void check_shapes(const Message& m, const std::vector<Tensor*>& grads, const MessageTag& tag, int peer) {
  PW_CHECK(m.tensors.size() == grads.size(), "all-reduce " + to_string(tag) + ": device " + std::to_string(peer) +
                                                  " sent " + std::to_string(m.tensors.size()) + " gradients, expected " +
                                                  std::to_string(grads.size()));
  for (size_t k = 0; k < grads.size(); ++k)
    PW_CHECK(m.tensors[k].numel() == grads[k]->numel(),
             "all-reduce " + to_string(tag) + ": gradient " + std::to_string(k) + " of device " +
                 std::to_string(peer) + " has shape " + m.tensors[k].shape_string() + ", expected " +
                 grads[k]->shape_string());
}

}  // namespace

void replica_allreduce(Transport& tr, int device, const std::vector<int>& replicas, int iteration, int stage,
                       int round, const std::vector<Tensor*>& grads, bool average, const RequestWait& wait,
                       std::vector<std::unique_ptr<Request>>& pending) {
  const auto me = std::find(replicas.begin(), replicas.end(), device);
  PW_CHECK(me != replicas.end(), "all-reduce of stage " + std::to_string(stage) + " on device " +
                                     std::to_string(device) + ", which is not one of its replicas");
  if (replicas.size() < 2) return;
  const MessageTag reduce{iteration, stage, round, Direction::reduce};
  const MessageTag bcast{iteration, stage, round, Direction::broadcast};
  const int root = replicas[0];
  if (device != root) {
    auto send = tr.isend(device, root, reduce, copy_of(grads));
    if (!send->test()) pending.push_back(std::move(send));
    auto recv = tr.irecv(device, root, bcast);
    wait(*recv, bcast, root);
    Message m = recv->take();
    check_shapes(m, grads, bcast, root);
    for (size_t k = 0; k < grads.size(); ++k)
      std::copy(m.tensors[k].data(), m.tensors[k].data() + m.tensors[k].numel(), grads[k]->data());
    return;
  }
  std::vector<std::unique_ptr<Request>> recvs;
  for (size_t i = 1; i < replicas.size(); ++i) recvs.push_back(tr.irecv(device, replicas[i], reduce));
  for (size_t i = 1; i < replicas.size(); ++i) {
    wait(*recvs[i - 1], reduce, replicas[i]);
    const Message m = recvs[i - 1]->take();
    check_shapes(m, grads, reduce, replicas[i]);
    for (size_t k = 0; k < grads.size(); ++k) {
      float* d = grads[k]->data();
      const float* s = m.tensors[k].data();
      for (int64_t e = 0; e < grads[k]->numel(); ++e) d[e] += s[e];
    }
  }
  if (average) {
    const float r = static_cast<float>(replicas.size());
    for (Tensor* g : grads) {
      float* d = g->data();
      for (int64_t e = 0; e < g->numel(); ++e) d[e] /= r;
    }
  }
  for (size_t i = 1; i < replicas.size(); ++i) {
    auto send = tr.isend(device, replicas[i], bcast, copy_of(grads));
    if (!send->test()) pending.push_back(std::move(send));
  }
}

}  // namespace pw::exec
