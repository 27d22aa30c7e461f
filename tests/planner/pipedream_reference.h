// Test helper: reads a PipeDream reference run (_reference_runs/<name>/run.log): the profile it
// used, -n/-b levels, flags and the printed "Time per stage in pipeline".
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

struct ReferenceRun {
  std::string name, graph;  // graph: path under pipedream-profiles/
  std::vector<int> machines;
  std::vector<double> bandwidths;
  bool straight = false, fewer = false, memory = false, comm = false;
  double memory_size = 16e9;
  double time_per_stage = -1;
};

inline ReferenceRun read_reference_run(const std::string& dir, const std::string& name) {
  ReferenceRun r;
  r.name = name;
  std::ifstream in(dir + "/" + name + "/run.log");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CMD:", 0) == 0) {
      std::istringstream ss(line.substr(4));
      std::vector<std::string> tok;
      for (std::string t; ss >> t;) tok.push_back(t);
      for (size_t k = 0; k < tok.size(); ++k) {
        auto list = [&](auto conv) {
          while (k + 1 < tok.size() && tok[k + 1][0] != '-') conv(tok[++k]);
        };
        if (tok[k] == "-f") {
          std::string f = tok[++k];
          auto model_of = [&](const std::string& marker) {
            size_t a = f.find(marker) + marker.size();
            return f.substr(a, f.find('/', a) - a);
          };
          if (f.find("compressed_graphs/") != std::string::npos)
            r.graph = model_of("compressed_graphs/") + "/graph_compressed.txt";
          else r.graph = model_of("profiles/") + "/graph.txt";
        } else if (tok[k] == "-n") {
          list([&](const std::string& v) { r.machines.push_back(std::stoi(v)); });
        } else if (tok[k] == "-b") {
          list([&](const std::string& v) { r.bandwidths.push_back(std::stod(v)); });
        } else if (tok[k] == "-s") {
          r.memory_size = std::stod(tok[++k]);
        } else if (tok[k] == "--straight_pipeline") {
          r.straight = true;
        } else if (tok[k] == "--use_fewer_machines") {
          r.fewer = true;
        } else if (tok[k] == "--use_memory_constraint") {
          r.memory = true;
        } else if (tok[k] == "--activation_compression_ratio") {
          r.comm = std::stod(tok[++k]) == 1.0;
        }
      }
    } else if (line.rfind("Time per stage in pipeline: ", 0) == 0) {
      r.time_per_stage = std::stod(line.substr(28));
    }
  }
  if (r.bandwidths.empty()) r.bandwidths.assign(r.machines.size(), 1e9);
  return r;
}
