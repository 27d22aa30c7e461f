// The README's examples and those of the manual it points to (kDocuments) are tests: every
// `pipewright ...` line of their ```sh blocks runs, document after document, in order, in one
// scratch directory, and must exit 0. Lines continue with a trailing '\', a
// " #" starts a comment, "> FILE" saves stdout. The extractor's "fast sizes" option swaps the
// README's big sizes for small ones (kFastSizes: what a user would run is the README's line;
// what CI runs is this, on 2 cores), and paths into the repository (bench/, third_party/) are
// made absolute. Not run here: lines that start with anything but `pipewright` (set-up, mpirun
// — the MPI ctest cases run those launches — and the PyTorch bridge, run by
// python/tests/test_bridge.py), and the one example that needs the bridge's output.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/tools/cli_runner.h"

using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

// The documents whose examples run, in this order (later ones use files earlier ones wrote).
const char* const kDocuments[] = {"README.md", "docs/commands.md"};

struct Example {
  std::string where;              // "docs/commands.md:12": the document and line the command starts on
  std::vector<std::string> args;  // after "pipewright"
  std::string stdout_file;        // "> FILE", or ""
};

// The README's size -> the size the suite runs (token pairs; "--steps 5000" of a --resume
// run continues past the first run's steps).
struct FastSize {
  std::string flag, from, to;
  bool only_with_resume = false;
};
const FastSize kFastSizes[] = {
    {"--steps", "200", "3"},
    {"--steps", "10", "2"},
    {"--steps", "5000", "6", true},
    {"--steps", "5000", "4"},
    {"--checkpoint-every", "100", "2"},
    {"--reps", "10", "2"},
    {"--devices", "8,64,512", "8,64"},
    {"--spec", "bench/whatif_sweep_1000.json", "bench/whatif_sweep_small.json"},
};

// Needs the PyTorch bridge's output (python/tests/test_bridge.py covers the bridge).
const char* const kNeedsBridge = "resnet50.profile.json";

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    if (c == '#' && !in_word) break;  // a comment
    cur += c;
    in_word = true;
  }
  if (in_word) words.push_back(cur);
  return words;
}

std::vector<Example> document_examples(const std::string& document) {
  std::ifstream in(std::string(PW_REPO_DIR) + "/" + document);
  REQUIRE_MESSAGE(in.good(), document);
  std::vector<Example> out;
  bool in_sh = false;
  std::string pending;
  int start = 0, n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      in_sh = !in_sh && line == "```sh";
      continue;
    }
    if (!in_sh) continue;
    if (pending.empty()) start = n;
    const bool continues = !line.empty() && line.back() == '\\';
    pending += continues ? line.substr(0, line.size() - 1) + " " : line;
    if (continues) continue;
    std::vector<std::string> words = split_words(pending);
    pending.clear();
    if (words.empty() || words[0] != "pipewright") continue;
    Example e;
    e.where = document + ":" + std::to_string(start);
    for (size_t k = 1; k < words.size(); ++k) {
      if (words[k] == ">" && k + 1 < words.size()) e.stdout_file = words[++k];
      else e.args.push_back(words[k]);
    }
    out.push_back(e);
  }
  return out;
}

bool has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

void apply_fast_sizes(std::vector<std::string>& args) {
  const bool resume = has(args, "--resume");
  for (size_t k = 0; k + 1 < args.size(); ++k)
    for (const FastSize& f : kFastSizes)
      if (args[k] == f.flag && args[k + 1] == f.from && (!f.only_with_resume || resume)) {
        args[k + 1] = f.to;
        break;
      }
}

void make_paths_absolute(std::vector<std::string>& args) {
  for (std::string& a : args) {
    if (a.rfind("bench/", 0) == 0 || a.rfind("third_party/", 0) == 0) a = std::string(PW_REPO_DIR) + "/" + a;
  }
}

// Files and prefixes an example writes (checkpoint directories excepted: --resume reuses them).
std::vector<std::string> outputs(const Example& e) {
  std::vector<std::string> out;
  if (!e.stdout_file.empty()) out.push_back(e.stdout_file);
  for (size_t k = 0; k + 1 < e.args.size(); ++k)
    if (e.args[k] == "-o" || e.args[k] == "--output" || e.args[k] == "--trace" || e.args[k] == "--svg" ||
        e.args[k] == "--run-trace")
      out.push_back(e.args[k + 1]);
  return out;
}

}  // namespace

TEST_CASE("README: every example of the README and the manual runs, in order, with distinct output files") {
  std::vector<Example> examples;
  for (const char* document : kDocuments) {
    const std::vector<Example> more = document_examples(document);
    CHECK_MESSAGE(!more.empty(), document << " has no example");
    examples.insert(examples.end(), more.begin(), more.end());
  }
  REQUIRE(examples.size() >= 30);
  std::map<std::string, std::string> written;  // file -> where the example that wrote it is
  ScratchDir dir;
  int ran = 0;
  for (Example e : examples) {
    CAPTURE(e.where);
    bool needs_bridge = false;
    for (const std::string& a : e.args) needs_bridge = needs_bridge || a == kNeedsBridge;
    for (const std::string& f : outputs(e)) {
      CAPTURE(f);
      CHECK_MESSAGE(written.count(f) == 0, e.where << " overwrites " << f << " of " << written[f]);
      written[f] = e.where;
    }
    if (needs_bridge) continue;
#ifndef PW_HAVE_EXEC
    if (!e.args.empty() &&
        (e.args[0] == "train" || e.args[0] == "run" || has(e.args, "--measure") || has(e.args, "--here")))
      continue;  // the executor is not built
#endif
    apply_fast_sizes(e.args);
    make_paths_absolute(e.args);
    std::string shown = "pipewright";
    for (const std::string& a : e.args) shown += " " + a;
    CAPTURE(shown);
    const CliResult r = run_cli(e.args, dir.file(""));
    CAPTURE(r.err);
    CHECK(r.rc == 0);
    if (!e.stdout_file.empty()) std::ofstream(dir.file(e.stdout_file)) << r.out;
    ++ran;
  }
  CHECK(ran >= 25);
}
