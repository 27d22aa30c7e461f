#include "exec/profile/handoff.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "exec/profile/co_run.h"
#include "exec/profile/in_context.h"
#include "exec/transport/transport_inproc.h"
#include "models/error.h"

namespace pw::exec {

int64_t measure_handoff_ns(const HandoffOptions& options) {
  if (options.trials < 1) throw InputError("hand-off measurement: trials must be >= 1");
  InProcTransport tr(2, 4, options.spin);
  std::vector<int64_t> latency(options.trials, 0);
  const auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(10); };
  co_run(2, 1, [&](int worker, CoRunBarrier& barrier) {
    for (int t = 0; t < options.trials; ++t) {
      const MessageTag tag{0, 0, t, Direction::forward};
      barrier.arrive_and_wait();
      if (worker == 0) {
        std::this_thread::sleep_for(options.idle);
        Message m;
        m.send_time_ns = profiler_now_ns(false);
        auto req = tr.isend(0, 1, tag, std::move(m));
        while (!req->test()) {
          const uint64_t epoch = tr.progress_epoch(0);
          if (req->test()) break;
          if (!tr.wait_for_progress(0, epoch, deadline()))
            throw InputError("hand-off measurement: the receiver never took message " + std::to_string(t));
        }
      } else {
        auto req = tr.irecv(1, 0, tag);
        while (true) {
          const uint64_t epoch = tr.progress_epoch(1);
          if (req->test()) break;
          if (!tr.wait_for_progress(1, epoch, deadline()))
            throw InputError("hand-off measurement: message " + std::to_string(t) + " never arrived");
        }
        const Message m = req->take();
        latency[t] = std::max<int64_t>(0, profiler_now_ns(false) - m.send_time_ns);
      }
    }
  });
  std::nth_element(latency.begin(), latency.begin() + options.trials / 2, latency.end());
  return latency[options.trials / 2];
}

}  // namespace pw::exec
