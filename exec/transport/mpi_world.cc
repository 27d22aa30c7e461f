#include "exec/transport/mpi_world.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "exec/transport/mpi_comms.h"
#include "models/error.h"

namespace pw::exec::mpi {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string("MPI: ") + what + ": " + std::string(text, static_cast<size_t>(len)));
}

// Poll interval: starts at 5 us, doubles to 500 us (a collective waits for the slowest rank).
struct Backoff {
  std::chrono::microseconds d{5};
  void sleep(World::Clock::time_point deadline) {
    const auto until = std::min(deadline, World::Clock::now() + d);
    std::this_thread::sleep_until(until);
    d = std::min(d * 2, std::chrono::microseconds(500));
  }
};

// The notice received, kept so that every later check throws it again.
std::optional<std::pair<int, std::string>> g_notice;

}  // namespace

bool launched_by_mpirun() { return launcher_world_size() > 0 || std::getenv("PMIX_RANK") != nullptr; }

int launcher_world_size() {
  if (int n = env_int("OMPI_COMM_WORLD_SIZE")) return n;
  return env_int("PMI_SIZE");
}

World::World() : comms_(new Comms) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    initialized_here_ = true;
    if (provided < MPI_THREAD_FUNNELED) throw std::runtime_error("MPI: MPI_THREAD_FUNNELED is not provided");
  }
  // Errors come back as codes (turned into exceptions here) rather than aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, static_cast<size_t>(len));
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comms_->data), "MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comms_->control), "MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comms_->collective), "MPI_Comm_dup");
}

World::~World() {
  if (initialized_here_) {
    for (MPI_Comm* c : {&comms_->data, &comms_->control, &comms_->collective})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
    MPI_Finalize();
  }
  delete comms_;
}

namespace {

// Cancels a point-to-point request being given up and waits (at most a second) for the cancel
// to complete: a receive not yet matched is cancelled at once (MPI 3.1, section 3.8.4), so no
// later message lands in its buffer. One that does not complete in time is left to the job's
// end (a message half received, or a send MPI will not cancel).
void abandon(MPI_Request* req) {
  if (*req == MPI_REQUEST_NULL || MPI_Cancel(req) != MPI_SUCCESS) return;
  const auto until = World::Clock::now() + std::chrono::seconds(1);
  Backoff backoff;
  while (true) {
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done || World::Clock::now() >= until) return;
    backoff.sleep(until);
  }
}

}  // namespace

void World::wait(void* request, Clock::time_point deadline, const std::string& what, bool point_to_point) {
  auto* req = static_cast<MPI_Request*>(request);
  Backoff backoff;
  while (true) {
    int done = 0;
    check_mpi(MPI_Test(req, &done, MPI_STATUS_IGNORE), what.c_str());
    if (done) return;
    try {
      check_peers();
      if (Clock::now() >= deadline) throw TransportTimeout("timed out in " + what + " (another rank is stuck or gone)");
    } catch (...) {
      if (point_to_point) abandon(req);
      throw;
    }
    backoff.sleep(deadline);
  }
}

void World::barrier(Clock::time_point deadline, const std::string& what) {
  MPI_Request req;
  check_mpi(MPI_Ibarrier(comms_->collective, &req), "MPI_Ibarrier");
  wait(&req, deadline, what);
}

std::vector<double> World::allreduce_max(const std::vector<double>& local, Clock::time_point deadline,
                                         const std::string& what) {
  std::vector<double> out(local.size());
  MPI_Request req;
  check_mpi(MPI_Iallreduce(local.data(), out.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_MAX,
                           comms_->collective, &req),
            "MPI_Iallreduce");
  wait(&req, deadline, what);
  return out;
}

std::vector<std::string> World::gather(const std::string& local, Clock::time_point deadline, const std::string& what) {
  // Point to point (send_bytes), so that no size limit of MPI's counts applies: a long run's
  // trace may pass 2 GiB. Rank 0 receives in rank order; messages from one rank keep their order.
  if (rank_ != 0) {
    send_bytes(0, local, deadline, what);
    return {};
  }
  std::vector<std::string> out{local};
  for (int r = 1; r < size_; ++r) out.push_back(recv_bytes(r, deadline, what));
  return out;
}

namespace {

// The chunks of [0, n) that recv_bytes receives (and send_bytes sends) one at a time.
template <class F>
void for_each_chunk(size_t n, size_t chunk, F&& f) {
  for (size_t at = 0; at < n; at += chunk) f(at, static_cast<int>(std::min(chunk, n - at)));
}

}  // namespace

void World::send_bytes(int dst, std::string_view bytes, Clock::time_point deadline, const std::string& what,
                       size_t chunk) {
  PW_CHECK(chunk >= 1 && chunk <= kMaxChunkBytes, "send_bytes: chunk of " + std::to_string(chunk) + " bytes");
  int64_t n = static_cast<int64_t>(bytes.size());
  MPI_Request req;
  check_mpi(MPI_Isend(&n, sizeof n, MPI_BYTE, dst, kBytesTag, comms_->collective, &req), "MPI_Isend");
  wait(&req, deadline, what, true);
  for_each_chunk(bytes.size(), chunk, [&](size_t at, int c) {
    check_mpi(MPI_Isend(bytes.data() + at, c, MPI_BYTE, dst, kBytesTag, comms_->collective, &req), "MPI_Isend");
    wait(&req, deadline, what, true);
  });
}

int64_t World::recv_length(int src, size_t chunk, Clock::time_point deadline, const std::string& what) {
  PW_CHECK(chunk >= 1 && chunk <= kMaxChunkBytes, "recv_bytes: chunk of " + std::to_string(chunk) + " bytes");
  int64_t n = 0;
  MPI_Request req;
  check_mpi(MPI_Irecv(&n, sizeof n, MPI_BYTE, src, kBytesTag, comms_->collective, &req), "MPI_Irecv");
  wait(&req, deadline, what, true);
  PW_CHECK(n >= 0, "recv_bytes: rank " + std::to_string(src) + " announced " + std::to_string(n) + " bytes");
  return n;
}

void World::recv_chunks(int src, char* p, size_t n, size_t chunk, Clock::time_point deadline, const std::string& what) {
  MPI_Request req;
  for_each_chunk(n, chunk, [&](size_t at, int c) {
    check_mpi(MPI_Irecv(p + at, c, MPI_BYTE, src, kBytesTag, comms_->collective, &req), "MPI_Irecv");
    wait(&req, deadline, what, true);
  });
}

std::string World::recv_bytes(int src, Clock::time_point deadline, const std::string& what, size_t chunk) {
  std::string out(static_cast<size_t>(recv_length(src, chunk, deadline, what)), '\0');
  recv_chunks(src, out.data(), out.size(), chunk, deadline, what);
  return out;
}

void World::recv_bytes_into(int src, void* data, size_t n, Clock::time_point deadline, const std::string& what,
                            size_t chunk) {
  const int64_t sent = recv_length(src, chunk, deadline, what);
  PW_CHECK(sent == static_cast<int64_t>(n), "recv_bytes: rank " + std::to_string(src) + " sent " +
                                                std::to_string(sent) + " bytes where " + std::to_string(n) +
                                                " were expected (" + what + ")");
  recv_chunks(src, static_cast<char*>(data), n, chunk, deadline, what);
}

void World::notify_failure(const std::string& text, std::chrono::milliseconds wait_for) {
  std::vector<MPI_Request> reqs;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request req;
    if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kAbortTag, comms_->control, &req) ==
        MPI_SUCCESS)
      reqs.push_back(req);
  }
  const auto deadline = Clock::now() + wait_for;
  Backoff backoff;
  while (!reqs.empty() && Clock::now() < deadline) {
    int done = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    backoff.sleep(deadline);
  }
}

void World::check_peers() {
  if (!g_notice) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comms_->control, &flag, &st);
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    std::string text(static_cast<size_t>(std::max(0, count)), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, kAbortTag, comms_->control, MPI_STATUS_IGNORE);
    g_notice.emplace(st.MPI_SOURCE, text);
  }
  throw PeerFailed(g_notice->first, g_notice->second);
}

std::vector<std::pair<int, std::string>> World::collect_notices(std::chrono::milliseconds wait_for) {
  std::vector<std::pair<int, std::string>> out;
  if (g_notice) out.push_back(*g_notice);
  const auto deadline = Clock::now() + wait_for;
  Backoff backoff;
  while (true) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comms_->control, &flag, &st);
    if (flag) {
      int count = 0;
      MPI_Get_count(&st, MPI_CHAR, &count);
      std::string text(static_cast<size_t>(std::max(0, count)), '\0');
      MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, kAbortTag, comms_->control, MPI_STATUS_IGNORE);
      if (!g_notice) g_notice.emplace(st.MPI_SOURCE, text);
      out.emplace_back(st.MPI_SOURCE, std::move(text));
      continue;
    }
    if (Clock::now() >= deadline) return out;
    backoff.sleep(deadline);
  }
}

void World::acknowledge_failure() {
  if (!g_notice) return;
  char byte = 1;
  MPI_Request req;
  if (MPI_Isend(&byte, 1, MPI_CHAR, g_notice->first, kAckTag, comms_->control, &req) != MPI_SUCCESS) return;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  Backoff backoff;
  while (Clock::now() < deadline) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    backoff.sleep(deadline);
  }
}

void World::await_acknowledgements(std::chrono::milliseconds wait_for) {
  const auto deadline = Clock::now() + wait_for;
  int acks = 0;
  Backoff backoff;
  while (acks < size_ - 1 && Clock::now() < deadline) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kAckTag, comms_->control, &flag, &st);
    if (flag) {
      char byte;
      MPI_Recv(&byte, 1, MPI_CHAR, st.MPI_SOURCE, kAckTag, comms_->control, MPI_STATUS_IGNORE);
      ++acks;
      continue;
    }
    backoff.sleep(deadline);
  }
}

void World::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace pw::exec::mpi
