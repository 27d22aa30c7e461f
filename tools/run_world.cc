#include "tools/run_world.h"

#include <cstdlib>
#include <exception>
#include <sstream>

#include "exec/machine/memory_crash.h"
#include "exec/runtime/device_lanes.h"
#include "models/error.h"
#include "tools/exit_status.h"
#ifdef PW_HAVE_MPI
#include "exec/runtime/run_ranks.h"
#endif

namespace pw::tools {

#ifdef PW_HAVE_MPI
bool launched_by_mpirun() { return exec::mpi::launched_by_mpirun(); }

exec::PipelineRunResult run_on_ranks(const models::Model& model, const planner::Plan& plan,
                                     const exec::PipelineRunOptions& o, World& world,
                                     const std::function<void(const exec::StepReport&)>& progress) {
  return exec::run_pipeline_ranks(model, plan, o, world, progress);
}
#else
void World::abort(int code) { std::exit(code); }

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

exec::PipelineRunResult run_on_ranks(const models::Model&, const planner::Plan&, const exec::PipelineRunOptions&,
                                     World&, const std::function<void(const exec::StepReport&)>&) {
  throw InputError("run: built without MPI");
}
#endif

RankPlace rank_place(World& world, const exec::PipelineRunOptions& o) {
  RankPlace p;
  p.rank = world.rank();
  p.all_on_this_host = world.local_size() == world.size();
  p.writes_checkpoints = !o.checkpoint_dir.empty() || !o.resume_dir.empty();
  if (!o.device.is_cpu())
    p.device = exec::rank_gpu(o.device, !o.device_by_local_rank, world.local_rank(), exec::usable_gpu_count());
  return p;
}

namespace {
std::string rank_prefix(int rank) {
  return rank == 0 ? "pipewright: " : "pipewright: rank " + std::to_string(rank) + ": ";
}
}  // namespace

void install_rank_crash_line(int rank) { exec::install_memory_crash_line(rank_prefix(rank).c_str()); }

int rank_failure_line(const std::exception_ptr& e, int rank, std::string& line) {
  std::ostringstream os;
  const int code = report_failure(e, os);
  line = os.str();
  while (!line.empty() && line.back() == '\n') line.pop_back();
  const std::string tool = "pipewright: ";
  if (line.rfind(tool, 0) == 0) line = rank_prefix(rank) + line.substr(tool.size());
  return code;
}

void wait_for_rank0_outputs(World& world) {
  try {
    world.barrier(std::chrono::steady_clock::now() + std::chrono::seconds(5), "waiting for rank 0's outputs");
  } catch (const std::exception&) {
    // rank 0 is gone or late: leave anyway, mpirun's SIGKILL is near
  }
}

}  // namespace pw::tools
