#include "tools/run_world.h"

#include <cstdlib>
#include <exception>

#include "exec/runtime/device_lanes.h"
#include "models/error.h"
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
  p.writes_checkpoints = !o.checkpoint_dir.empty();
  if (!o.device.is_cpu())
    p.device = exec::rank_gpu(o.device, !o.device_by_local_rank, world.local_rank(), exec::usable_gpu_count());
  return p;
}

void wait_for_rank0_outputs(World& world) {
  try {
    world.barrier(std::chrono::steady_clock::now() + std::chrono::seconds(5), "waiting for rank 0's outputs");
  } catch (const std::exception&) {
    // rank 0 is gone or late: leave anyway, mpirun's SIGKILL is near
  }
}

}  // namespace pw::tools
