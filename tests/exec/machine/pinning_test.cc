#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "exec/machine/pinning.h"
#include "exec/runtime/run_pipeline.h"
#include "planner/schedule_gen.h"

using namespace pw::exec;

TEST_CASE("assign_cores: one socket, as many workers as cores") {
  auto a = assign_cores({0, 0}, 2);
  REQUIRE(a.size() == 2);
  CHECK(a[0].cores == std::vector<int>{0});
  CHECK(a[1].cores == std::vector<int>{1});
  CHECK_FALSE(a[0].shared);
  CHECK(oversubscription_warning(2, 2).empty());
}

TEST_CASE("assign_cores: more workers than cores share them round-robin") {
  auto a = assign_cores({0, 0}, 3);
  REQUIRE(a.size() == 3);
  CHECK(a[0].cores == std::vector<int>{0});
  CHECK(a[1].cores == std::vector<int>{1});
  CHECK(a[2].cores == std::vector<int>{0});
  CHECK(a[2].shared);
  CHECK(oversubscription_warning(3, 2) ==
        "warning: 3 stage workers on 2 cores: workers share cores, expect a slower run");
}

TEST_CASE("assign_cores: two sockets keep each worker on one socket") {
  const std::vector<int> two_by_four = {0, 0, 0, 0, 1, 1, 1, 1};
  auto a2 = assign_cores(two_by_four, 2);
  CHECK(a2[0].cores == std::vector<int>{0, 1, 2, 3});
  CHECK(a2[0].package == 0);
  CHECK(a2[1].cores == std::vector<int>{4, 5, 6, 7});
  CHECK(a2[1].package == 1);
  CHECK(a2[1].to_string() == "cores 4-7 (socket 1)");

  auto a3 = assign_cores(two_by_four, 3);
  CHECK(a3[0].cores == std::vector<int>{0, 1});
  CHECK(a3[1].cores == std::vector<int>{2, 3});
  CHECK(a3[2].cores == std::vector<int>{4, 5, 6, 7});
  CHECK(a3[2].package == 1);

  auto a5 = assign_cores(two_by_four, 5);  // 3 + 2 workers; 4 cores split 2,1,1 and 2,2
  CHECK(a5[0].cores == std::vector<int>{0, 1});
  CHECK(a5[1].cores == std::vector<int>{2});
  CHECK(a5[2].cores == std::vector<int>{3});
  CHECK(a5[3].cores == std::vector<int>{4, 5});
  CHECK(a5[4].cores == std::vector<int>{6, 7});

  auto a1 = assign_cores(two_by_four, 1);  // one worker spans both sockets
  CHECK(a1[0].cores.size() == 8);
}

TEST_CASE("Machine: binding a thread restricts it to its core's PUs") {
  const Machine& m = Machine::instance();
  REQUIRE(m.num_cores() >= 1);
  CHECK(m.package_of_core().size() == static_cast<size_t>(m.num_cores()));
  const auto all = m.current_thread_pus();
  std::vector<int> pus;
  bool ok = false;
  std::thread th([&] {
    CoreSet last{{m.num_cores() - 1}, 0, false};
    ok = m.bind_current_thread(last);
    pus = m.current_thread_pus();
  });
  th.join();
  REQUIRE(ok);
  REQUIRE(!pus.empty());
  for (int p : pus) CHECK(std::find(all.begin(), all.end(), p) != all.end());
  if (m.num_cores() > 1) CHECK(pus.size() < all.size());
}

TEST_CASE("loader_device: cores of its own when the workers leave some, else the last stage's worker") {
  using pw::planner::ScheduleKind;
  const auto two = pw::planner::make_schedule(ScheduleKind::one_f_one_b, 2, 4);
  CHECK(loader_device(two, 2, 4) == -1);  // 2 workers on 4 cores: the loader gets the other 2
  CHECK(loader_device(two, 2, 2) == 1);   // every core has a worker: the last stage's, idle at the start
  // From a placement: 2 workers on a 4-core socket take 2 cores each, so none is left over.
  CHECK(loader_device(two, assign_cores({0, 0, 0, 0}, 2), 4) == 1);
  CHECK(loader_device(two, assign_cores({0, 0}, 2), 4) == -1);  // a 4-core machine, workers on 2 of them
  CHECK(loader_device(pw::planner::make_schedule(ScheduleKind::gpipe, 1, 1), 2, 2) == 0);
  // Interleaved: virtual stage 3 (the last) is on device 1.
  CHECK(loader_device(pw::planner::make_schedule(ScheduleKind::interleaved_1f1b, 2, 4, 2), 2, 2) == 1);
}
