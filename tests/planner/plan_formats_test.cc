// plan --format: Megatron layout string and flags, DeepSpeed parts, torch split points, for
// hand-built plans of a small GPT profile.
#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/plan_formats.h"

using namespace pw;
using namespace pw::planner;

namespace {

models::Profile gpt_profile() {
  models::Profile p;
  p.model = "gpt";
  p.source = "analytic";
  const std::pair<const char*, const char*> layers[] = {{"tokens", "input"},
                                                        {"embed", "embedding"},
                                                        {"block0", "transformer_block"},
                                                        {"block1", "transformer_block"},
                                                        {"block2", "transformer_block"},
                                                        {"block3", "transformer_block"},
                                                        {"head", "lm_head"},
                                                        {"loss", "softmax_xent"}};
  for (auto [name, kind] : layers) {
    models::LayerProfile l;
    l.name = name;
    l.kind = kind;
    l.is_data_loading = std::string(kind) == "input";
    p.layers.push_back(l);
  }
  return p;
}

// Stages of consecutive layers with the given sizes, one device each.
Plan plan_of(const models::Profile& p, std::vector<int> sizes, int chunks = 1) {
  Plan plan;
  plan.model = p.model;
  plan.chunks = chunks;
  plan.schedule = chunks > 1 ? ScheduleKind::interleaved_1f1b : ScheduleKind::one_f_one_b;
  plan.batch = 16;
  plan.micro_batch_size = 2;
  plan.num_micro_batches = 8;
  int first = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    StagePlan st;
    st.first_layer = first;
    st.end_layer = first + sizes[s];
    for (int i = st.first_layer; i < st.end_layer; ++i) st.layer_names.push_back(p.layers[i].name);
    st.devices = {static_cast<int>(s) % (static_cast<int>(sizes.size()) / chunks)};
    plan.stages.push_back(st);
    first = st.end_layer;
  }
  return plan;
}

}  // namespace

TEST_CASE("megatron: layout string and stage flags") {
  const models::Profile p = gpt_profile();
  CHECK(format_plan_for(plan_of(p, {4, 4}), p, PlanFormat::megatron) ==
        "--pipeline-model-parallel-size 2 --num-layers 4 --pipeline-model-parallel-layout \"Et*2|t*2L\" "
        "--micro-batch-size 2 --global-batch-size 16\n");
  // Interleaved: virtual stages in order (rank 0 chunk 0, rank 1 chunk 0, rank 0 chunk 1, ...).
  CHECK(format_plan_for(plan_of(p, {3, 1, 1, 3}, 2), p, PlanFormat::megatron) ==
        "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --num-layers 4 "
        "--pipeline-model-parallel-layout \"Et|t|t|tL\" --micro-batch-size 2 --global-batch-size 16\n");
  CHECK_THROWS_WITH_AS(format_plan_for(plan_of(p, {7, 1}), p, PlanFormat::megatron),
                       "--format megatron: the output head and loss are split over stages; Megatron's L is one layer",
                       InputError);
  models::Profile conv = p;
  conv.layers[2].kind = "conv2d";
  CHECK_THROWS_WITH_AS(format_plan_for(plan_of(conv, {4, 4}), conv, PlanFormat::megatron),
                       "--format megatron: layer \"block0\" (kind conv2d) has no Megatron layout symbol (E embedding, "
                       "t transformer layer, L final norm, output and loss)",
                       InputError);
}

TEST_CASE("deepspeed: partition boundaries over the layers without the input") {
  const models::Profile p = gpt_profile();
  CHECK(format_plan_for(plan_of(p, {4, 4}), p, PlanFormat::deepspeed) ==
        "# DeepSpeed PipelineModule(layers=<the model's 7 layers in this order, input excluded>, num_stages=2)\n"
        "# stage s owns layers[parts[s]:parts[s+1]] (PipelineModule.parts; set them by overriding _partition_layers)\n"
        "num_stages = 2\n"
        "parts = [0, 3, 7]\n"
        "# stage 0: layers 0..2 (embed .. block1)\n"
        "# stage 1: layers 3..6 (block2 .. loss)\n"
        "# micro_batch_size = 2, gradient_accumulation_steps = 8\n");
}

TEST_CASE("torch: split points at the first layer of every later stage") {
  const models::Profile p = gpt_profile();
  CHECK(format_plan_for(plan_of(p, {3, 2, 3}), p, PlanFormat::torch) ==
        "from torch.distributed.pipelining import SplitPoint, pipeline\n"
        "split_spec = {\n"
        "    \"block1\": SplitPoint.BEGINNING,  # stage 1\n"
        "    \"block3\": SplitPoint.BEGINNING,  # stage 2\n"
        "}\n"
        "# pipe = pipeline(model, mb_args=(<one micro-batch of 2 samples>,), split_spec=split_spec)  # 3 stages\n"
        "# schedule: Schedule1F1B(stages, n_microbatches=8, loss_fn=...)\n");
}

TEST_CASE("torch: module paths name the split points where the profile has them") {
  models::Profile p = gpt_profile();
  const char* modules[] = {"", "tok", "blocks", "blocks.1", "", "blocks.3", "", ""};
  for (size_t i = 0; i < p.layers.size(); ++i) p.layers[i].module = modules[i];
  CHECK(format_plan_for(plan_of(p, {3, 2, 3}), p, PlanFormat::torch) ==
        "from torch.distributed.pipelining import SplitPoint, pipeline\n"
        "split_spec = {\n"
        "    \"blocks.1\": SplitPoint.BEGINNING,  # stage 1\n"
        "    \"blocks.3\": SplitPoint.BEGINNING,  # stage 2\n"
        "}\n"
        "# pipe = pipeline(model, mb_args=(<one micro-batch of 2 samples>,), split_spec=split_spec)  # 3 stages\n"
        "# schedule: Schedule1F1B(stages, n_microbatches=8, loss_fn=...)\n");
  CHECK_THROWS_WITH_AS(format_plan_for(plan_of(p, {4, 4}), p, PlanFormat::torch),
                       "--format torch: stage 1 begins at layer \"block2\", where no submodule call begins; "
                       "PyTorch's split points are submodule paths",
                       InputError);
}

TEST_CASE("replicated stages and unknown formats are rejected") {
  const models::Profile p = gpt_profile();
  Plan plan = plan_of(p, {4, 4});
  plan.stages[1].devices = {1, 2};
  CHECK_THROWS_WITH_AS(format_plan_for(plan, p, PlanFormat::torch),
                       "--format torch: stage 1 has 2 replicas; the framework runs one rank per stage (plan with "
                       "--straight)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_plan_format("jax", "--format"),
                       "--format: unknown format \"jax\" (expected one of megatron, deepspeed, torch)", InputError);
}
