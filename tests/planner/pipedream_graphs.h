// The vendored PipeDream graphs the planner's tests and benchmarks plan: every network of
// third_party/pipedream-profiles (the compressed variants too), paths relative to
// PW_PIPEDREAM_DIR.
#pragma once

namespace pw::test {

inline constexpr const char* kPipeDreamGraphs[] = {"alexnet/graph.txt",
                                                   "vgg16/graph.txt",
                                                   "resnet18/graph.txt",
                                                   "squeezenet1_0/graph.txt",
                                                   "resnet50/graph.txt",
                                                   "resnext50/graph.txt",
                                                   "resnet101/graph.txt",
                                                   "resnext101/graph.txt",
                                                   "densenet121/graph.txt",
                                                   "inception_v3/graph.txt",
                                                   "inception_v3/graph_compressed.txt",
                                                   "nasnetamobile/graph.txt",
                                                   "nasnetamobile/graph_compressed.txt",
                                                   "nasnetalarge/graph.txt",
                                                   "nasnetalarge/graph_compressed.txt",
                                                   "gnmt/graph.txt",
                                                   "gnmt_large/graph.txt"};

}  // namespace pw::test
