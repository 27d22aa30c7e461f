// mpi::World: the MPI job this process belongs to (MPI_COMM_WORLD), behind an interface that
// does not expose <mpi.h> (only exec/transport/*_mpi.cc and mpi_world.cc include it).
//
// Threading contract: MPI is initialized with MPI_THREAD_FUNNELED. Every MPI call (World,
// MpiTransport, their requests) must come from the thread that constructed the World; compute
// may use other threads (OpenMP) that never touch MPI.
//
// Lifetime: at most one World per process. The constructor calls MPI_Init_thread unless MPI is
// already initialized; the destructor calls MPI_Finalize if this World initialized it (and the
// job was not aborted).
//
// Collectives (barrier, allreduce_max, gather) are started non-blocking and polled with
// short sleeps until done: they throw TransportTimeout past the deadline and PeerFailed when
// another rank sent an abort notice meanwhile, so no wait can hang.
//
// Abort protocol (a rank that fails mid-run): it calls notify_failure(text), which sends `text`
// ("rank 1 failed at B(1,3): ...") to every other rank on a private communicator; a rank that
// polls (every transport wait and collective does) throws PeerFailed(text); once it has printed
// its own line it acknowledges, and the failed rank, after waiting for every acknowledgement
// (bounded), calls abort(code). abort(code) ends
// the whole job (MPI_Abort: mpirun kills every rank), so nothing is left hanging.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/transport/transport.h"

namespace pw::exec::mpi {

// True when this process was started by an MPI launcher (Open MPI's OMPI_COMM_WORLD_SIZE, or
// PMI_SIZE / PMIX_RANK of other launchers), read from the environment without initializing MPI.
bool launched_by_mpirun();
// The world size the launcher announced in the environment, 0 when unknown.
int launcher_world_size();

// A wait passed its deadline (a peer is stuck or gone).
class TransportTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Another rank failed; what() is its notice ("rank 1 failed at B(1,3): ...").
class PeerFailed : public TransportCancelled {
 public:
  PeerFailed(int rank, const std::string& text) : TransportCancelled(text), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

class World {
 public:
  using Clock = std::chrono::steady_clock;

  World();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank and rank count among the processes on this host (MPI_COMM_TYPE_SHARED).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }
  // MPI_TAG_UB of the job (>= 32767 by the standard).
  int tag_upper_bound() const { return tag_ub_; }

  void barrier(Clock::time_point deadline, const std::string& what);
  // Element-wise maximum over all ranks, returned on every rank.
  std::vector<double> allreduce_max(const std::vector<double>& local, Clock::time_point deadline,
                                    const std::string& what);
  // Rank 0 gets every rank's bytes in rank order, of any size (sent point to point, below);
  // other ranks get an empty vector.
  std::vector<std::string> gather(const std::string& local, Clock::time_point deadline, const std::string& what);
  // Point-to-point bytes of any size between two ranks (outside the collectives' order): the
  // sender's send_bytes returns once `dst` has all of them, recv_bytes returns what `src` sent.
  // Messages from one rank arrive in the order sent. Sent as a length, then chunks of at most
  // `chunk` bytes (MPI counts are int; both sides must pass the same `chunk`, tests pass small ones).
  void send_bytes(int dst, std::string_view bytes, Clock::time_point deadline, const std::string& what,
                  size_t chunk = kMaxChunkBytes);
  std::string recv_bytes(int src, Clock::time_point deadline, const std::string& what, size_t chunk = kMaxChunkBytes);
  // recv_bytes into the `n` bytes at `data`: throws InternalError when `src` sent another size.
  void recv_bytes_into(int src, void* data, size_t n, Clock::time_point deadline, const std::string& what,
                       size_t chunk = kMaxChunkBytes);
  static constexpr size_t kMaxChunkBytes = size_t{1} << 30;

  // Sends `text` to every other rank (best effort, waits up to `wait` for the sends).
  void notify_failure(const std::string& text, std::chrono::milliseconds wait = std::chrono::milliseconds(1000));
  // Throws PeerFailed if an abort notice has arrived.
  void check_peers();
  // After a PeerFailed (and after printing): tells the failed rank this rank has seen it.
  void acknowledge_failure();
  // The failed rank, after notify_failure: waits until every other rank acknowledged, at most
  // `wait` (a rank busy in a long op or gone may never answer).
  void await_acknowledgements(std::chrono::milliseconds wait);
  // Every abort notice this rank has received, and those that arrive within `wait` from now,
  // as (sending rank, text) in arrival order (after the first, check_peers throws the first).
  // For faults several ranks may hit at once (a NaN), so that every rank can pick the same one.
  std::vector<std::pair<int, std::string>> collect_notices(std::chrono::milliseconds wait);
  // MPI_Abort(MPI_COMM_WORLD, code): every rank of the job ends. Does not return.
  [[noreturn]] void abort(int code);

  // Opaque MPI_Comm handles for exec/transport's MPI code (an MPI_Comm stored in 8 bytes).
  struct Comms;
  Comms& comms() { return *comms_; }

 private:
  // Waits for `request` until `deadline`, checking for another rank's failure. A point-to-point
  // request given up (the deadline passed, or PeerFailed) is cancelled first, so that a message
  // arriving later is not received into (or sent from) the caller's buffer after it is gone;
  // collectives cannot be cancelled (MPI forbids it), and the job is ending then anyway.
  void wait(void* request, Clock::time_point deadline, const std::string& what, bool point_to_point = false);
  // recv_bytes' two parts: the announced length (checked >= 0), then the chunks into p[0, n).
  int64_t recv_length(int src, size_t chunk, Clock::time_point deadline, const std::string& what);
  void recv_chunks(int src, char* p, size_t n, size_t chunk, Clock::time_point deadline, const std::string& what);

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, tag_ub_ = 32767;
  std::string host_;
  bool initialized_here_ = false;
  Comms* comms_ = nullptr;
};

}  // namespace pw::exec::mpi
