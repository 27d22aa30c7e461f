#include "exec/profile/co_run.h"

#include <barrier>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/machine/pinning.h"
#include "exec/parallel.h"
#include "models/error.h"

namespace pw::exec {

namespace {
class StdBarrier final : public CoRunBarrier {
 public:
  explicit StdBarrier(int n) : b_(n) {}
  void arrive_and_wait() override { b_.arrive_and_wait(); }
  // A failing copy leaves the barrier so the others do not wait for it forever.
  void drop() { b_.arrive_and_drop(); }

 private:
  std::barrier<> b_;
};
}  // namespace

void co_run_on(const CopyThreads& threads, const std::function<void(int, CoRunBarrier&)>& fn) {
  if (threads.workers < 1)
    throw InputError("co-run: expected at least one worker, got " + std::to_string(threads.workers));
  StdBarrier barrier(threads.workers);
  std::mutex mu;
  std::exception_ptr first;
  threads.run([&](int w) {
    try {
      fn(w, barrier);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!first) first = std::current_exception();
      barrier.drop();
    }
  });
  if (first) std::rethrow_exception(first);
}

void co_run(int workers, int threads, const std::function<void(int, CoRunBarrier&)>& fn) {
  if (workers < 1) throw InputError("co-run: expected at least one worker, got " + std::to_string(workers));
  const Machine& m = Machine::instance();
  const std::vector<CoreSet> cores = m.assign(workers);
  CopyThreads own;
  own.workers = workers;
  own.run = [&](const std::function<void(int)>& body) {
    std::vector<std::thread> ts;
    for (int w = 0; w < workers; ++w)
      ts.emplace_back([&, w] {
        m.bind_current_thread(cores[w]);
        set_num_threads(threads > 0 ? threads : static_cast<int>(cores[w].cores.size()));
        body(w);
      });
    for (auto& t : ts) t.join();
  };
  co_run_on(own, fn);
}

}  // namespace pw::exec
