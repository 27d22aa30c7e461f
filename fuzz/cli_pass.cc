// pw_cli_fuzz: a hostile user's pass over the command line's input files. It mutates valid input
// files (seeds written by the tool itself, scripts/cli_fuzz.sh) and runs the command that reads
// each mutant, in a fresh output folder, checking what a user relies on:
//   crash      the command died of a signal;
//   internal   exit 70 (an internal error: a bug, never bad input);
//   hang       still running after --timeout seconds (killed);
//   lines      a non-zero exit printed other than exactly one line on stderr;
//   partial    a non-zero exit left a file in the output folder;
//   accepted   exit 0 although a number was replaced by one beyond every limit (+-1e300, +-2^62).
// Each finding is printed with the kind, the mutation and the first stderr line, and its input is
// kept under --keep. Exit 0 when there is none, 1 otherwise, 2 on bad arguments.
//
//   pw_cli_fuzz --pipewright BIN --seeds DIR --runs N [--seed S] [--timeout SEC] [--keep DIR]
//               [--kinds model,plan,...]
//
// The seeds folder holds, by name: model.json, profile.json, cluster.json, plan.json, sweep.json,
// run_plan.json with run_trace.json (a measured run and its plan), schedule.csv, device.json (a
// `calibrate` device file), graph.txt (a PipeDream graph with stage ids, read by `import`) and
// checkpoint/ (a checkpoint folder of run_plan.json's run at step 13, resumed for 2 steps).
// Which command
// reads which is the table `kinds`.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// One kind of input file: the seed it mutates and the command that reads the mutant. In `args`,
// {in} is the mutant's path, {out} the run's output folder, {seeds} the seeds folder.
struct Kind {
  std::string name;
  std::string seed;  // a file, or a folder (checkpoint: manifest.json or a tensor file mutated)
  std::vector<std::string> args;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"model", "model.json", {"model", "{in}", "-o", "{out}/m.json"}},
      {"profile", "profile.json", {"plan", "--profile", "{in}", "--devices", "4", "-o", "{out}/p.json"}},
      {"cluster",
       "cluster.json",
       {"plan", "--profile", "{seeds}/profile.json", "--cluster", "{in}", "-o", "{out}/p.json"}},
      {"plan",
       "plan.json",
       {"simulate", "--plan", "{in}", "--profile", "{seeds}/profile.json", "--trace", "{out}/t.json", "--svg",
        "{out}/t.svg"}},
      {"sweep",
       "sweep.json",
       {"whatif", "sweep", "--spec", "{in}", "--no-simulate", "--threads", "1", "--svg", "{out}/s.svg"}},
      {"run-trace", "run_trace.json", {"simulate", "--replay", "{in}", "--trace", "{out}/t.json"}},
      {"schedule", "schedule.csv", {"schedule", "import", "{in}", "-o", "{out}/s.json", "--svg", "{out}/s.svg"}},
      {"device",
       "device.json",
       {"plan", "--model", "{seeds}/model.json", "--device", "{in}", "--devices", "2", "-o", "{out}/p.json"}},
      {"pipedream", "graph.txt", {"import", "pipedream", "{in}", "-o", "{out}/p.json"}},
      {"checkpoint",
       "checkpoint",
       {"run", "--plan", "{seeds}/run_plan.json", "--steps", "15", "--resume", "{in}", "--checkpoint", "{out}/ck",
        "--json"}},
  };
  return k;
}

struct Mutant {
  std::string text;  // the mutated bytes
  std::string what;  // the mutation, for the report
  bool beyond_limits = false;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A key as a JSON pointer token (RFC 6901: ~ as ~0, / as ~1).
std::string pointer_token(const std::string& key) {
  std::string t;
  for (char c : key) t += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return t;
}

// Every value of a JSON document, by JSON pointer.
void collect(const Json& j, const std::string& at, std::vector<std::string>& paths) {
  paths.push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) collect(it.value(), at + "/" + pointer_token(it.key()), paths);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) collect(j[i], at + "/" + std::to_string(i), paths);
}

template <class T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

Mutant mutate_bytes(const std::string& text, std::mt19937_64& rng) {
  Mutant m;
  m.text = text;
  if (text.empty()) {
    m.what = "empty file";
    return m;
  }
  const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng);
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
    case 0:
      m.text.resize(at);
      m.what = "truncated at byte " + std::to_string(at);
      break;
    case 1:
      m.text[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
      m.what = "byte " + std::to_string(at) + " replaced";
      break;
    default:
      m.text.insert(at, pick(rng, std::vector<std::string>{"\xff\xfe", "\"", ",", "]", "}", "{", "\n", "1e999",
                                                           std::string(1, '\0')}));
      m.what = "bytes inserted at " + std::to_string(at);
  }
  return m;
}

Mutant mutate_json(const std::string& text, std::mt19937_64& rng) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const std::exception&) { return mutate_bytes(text, rng); }
  if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) return mutate_bytes(text, rng);
  std::vector<std::string> paths;
  collect(doc, "", paths);
  const std::string at = pick(rng, paths);
  Json::json_pointer ptr(at);
  Json& v = doc[ptr];
  Mutant m;
  const int choice = std::uniform_int_distribution<int>(0, 9)(rng);
  if ((v.is_number() && choice < 6) || choice == 0) {
    static const std::vector<double> beyond = {1e300, -1e300, 4611686018427387904.0, -4611686018427387904.0};
    static const std::vector<Json> odd = {0, -1, 1, 2147483648LL, 4294967298LL, 1000000000, 0.5, 1.5, -0.0};
    if (v.is_number() && std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
      const double b = pick(rng, beyond);
      if (std::abs(b) < 1e100) v = static_cast<int64_t>(b);
      else v = b;
      m.beyond_limits = true;
    } else {
      v = pick(rng, odd);
    }
    m.what = at + " := " + v.dump();
  } else if (choice < 8 && !at.empty()) {
    // Remove the value from its parent.
    Json::json_pointer parent = ptr.parent_pointer();
    Json& p = doc[parent];
    const std::string last = ptr.back();
    if (p.is_object()) p.erase(last);
    else p.erase(p.begin() + std::stol(last));
    m.what = at + " removed";
  } else if (choice == 8) {
    v = pick(rng, std::vector<Json>{Json(), Json::array(), Json::object(), "", "x", true, std::string(5000, 'a')});
    m.what = at + " := " + v.dump().substr(0, 40);
  } else if (v.is_array() && !v.empty()) {
    const Json first = v[0];
    const size_t copies = pick(rng, std::vector<size_t>{1, 2, 100});
    for (size_t i = 0; i < copies; ++i) v.push_back(first);
    m.what = at + ": " + std::to_string(copies) + " more copies of its first element";
  } else {
    v = pick(rng, std::vector<Json>{"-1", "nan", "inf", "1e999", "0x10"});
    m.what = at + " := " + v.dump();
  }
  m.text = doc.dump(1);
  return m;
}

// Cells of the compute-only schedule CSV: one replaced, removed or a row duplicated.
Mutant mutate_csv(const std::string& text, std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) return mutate_bytes(text, rng);
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  Mutant m;
  if (rows.empty()) return mutate_bytes(text, rng);
  auto& row = rows[std::uniform_int_distribution<size_t>(0, rows.size() - 1)(rng)];
  const int choice = std::uniform_int_distribution<int>(0, 3)(rng);
  if (choice == 0) {
    rows.push_back(row);
    m.what = "a row repeated";
  } else if (row.empty()) {
    row.push_back("0F0");
    m.what = "a cell added";
  } else {
    const size_t c = std::uniform_int_distribution<size_t>(0, row.size() - 1)(rng);
    if (choice == 1) {
      row.erase(row.begin() + static_cast<long>(c));
      m.what = "a cell removed";
    } else {
      static const std::vector<std::string> cells = {
          "0F999999999", "999999999F0", "2147483648B0", "-1F0", "0F-1", "0X0", "F",
          "0F",          "00F00",       "0SEND0",       "0W0",  "0I0",  ""};
      row[c] = pick(rng, cells);
      m.what = "cell := \"" + row[c] + "\"";
      m.beyond_limits = row[c].find("99999999") != std::string::npos || row[c].find("2147483648") != std::string::npos;
    }
  }
  std::string out;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + r[i];
    out += "\n";
  }
  m.text = out;
  return m;
}

// A PipeDream graph (`<id> -- <desc> -- forward_compute_time=..., ... [-- stage_id=N]` node
// lines, then `\t<a> -- <b>` edge lines): one value of a node line replaced (beyond the limit of
// what it becomes in a profile, or odd), or a line removed or repeated.
Mutant mutate_graph(const std::string& text, std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) return mutate_bytes(text, rng);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.empty()) return mutate_bytes(text, rng);
  const size_t k = std::uniform_int_distribution<size_t>(0, lines.size() - 1)(rng);
  std::string& line = lines[k];
  // The metric and stage_id fields of a node line (not the description's "kernel_size=2"): key,
  // and where its value starts and ends (at ", ", " -- " or the line's end; a list at its ']').
  struct Field {
    std::string key;
    size_t from, to;
  };
  std::vector<Field> fields;
  for (size_t eq = line.find('='); eq != std::string::npos && line[0] != '\t'; eq = line.find('=', eq + 1)) {
    const size_t key_at = line.rfind(' ', eq) + 1;  // every key follows a space
    size_t to = std::min({line.find(", ", eq), line.find(" -- ", eq), line.size()});
    if (line.compare(eq + 1, 1, "[") == 0 && line.find(']', eq) != std::string::npos) to = line.find(']', eq) + 1;
    const std::string key = line.substr(key_at, eq - key_at);
    static const std::vector<std::string> keys = {"forward_compute_time", "backward_compute_time", "activation_size",
                                                  "parameter_size", "stage_id"};
    if (std::count(keys.begin(), keys.end(), key)) fields.push_back({key, eq + 1, to});
  }
  Mutant m;
  if (fields.empty() || std::uniform_int_distribution<int>(0, 5)(rng) == 0) {
    if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
      lines.erase(lines.begin() + static_cast<long>(k));
      m.what = "line " + std::to_string(k + 1) + " removed";
    } else {
      lines.push_back(lines[k]);
      m.what = "line " + std::to_string(k + 1) + " repeated at the end";
    }
  } else {
    const Field& f = pick(rng, fields);
    // Past the limits a profile and a plan hold: 1e9 ms for one op, 1e18 bytes, 2^16 stages.
    static const std::vector<std::string> beyond_time_or_size = {"9223372036854.999999", "1000000000.000001",
                                                                 "1000000000000000001.0", "9223372036854775807",
                                                                 "[900000000000000000.0; 900000000000000000.0]"};
    static const std::vector<std::string> beyond_stage = {"65536", "4294967297", "9223372036854775807"};
    static const std::vector<std::string> odd = {"0", "-1.0", "1e3", "", "0.0000001", "nan", "[]", "[4.0;]", "1.5"};
    std::string value;
    if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
      value = pick(rng, f.key == "stage_id" ? beyond_stage : beyond_time_or_size);
      m.beyond_limits = true;
    } else {
      value = pick(rng, odd);
    }
    line.replace(f.from, f.to - f.from, value);
    m.what = "line " + std::to_string(k + 1) + ": " + f.key + " := \"" + value + "\"";
  }
  for (const auto& l : lines) m.text += l + "\n";
  return m;
}

struct Outcome {
  int exit_code = 0;  // -signal when killed by one
  bool timed_out = false;
  std::string err;
  double seconds = 0;
};

Outcome run_command(const std::vector<std::string>& argv, const fs::path& err_file, double timeout_s) {
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int null = open("/dev/null", O_RDWR);
    const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(null, 0);
    dup2(null, 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (el > timeout_s && !o.timed_out) {
      o.timed_out = true;
      kill(-pid, SIGKILL);  // its process group (the child made one) ...
      kill(pid, SIGKILL);   // ... or the child alone, should it not have yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  o.err = slurp(err_file);
  return o;
}

size_t files_under(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += !e.is_directory();
  return n;
}

struct Args {
  std::string pipewright, seeds, keep;
  long runs = 0;
  uint64_t seed = 1;
  double timeout_s = 20;
  std::vector<std::string> kinds;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "pw_cli_fuzz: " << why
            << "\nusage: pw_cli_fuzz --pipewright BIN --seeds DIR --runs N [--seed S] [--timeout SEC] [--keep DIR]"
               " [--kinds a,b,...]\n";
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) usage(f + ": expected a value");
    const std::string v = argv[++i];
    try {
      if (f == "--pipewright") a.pipewright = fs::absolute(v).string();
      else if (f == "--seeds") a.seeds = fs::absolute(v).string();
      else if (f == "--keep") a.keep = fs::absolute(v).string();
      else if (f == "--runs") a.runs = std::stol(v);
      else if (f == "--seed") a.seed = std::stoull(v);
      else if (f == "--timeout") a.timeout_s = std::stod(v);
      else if (f == "--kinds") {
        std::istringstream s(v);
        for (std::string k; std::getline(s, k, ',');) a.kinds.push_back(k);
      } else usage("unknown flag " + f);
    } catch (const std::logic_error&) { usage(f + ": not a number: " + v); }
  }
  if (a.pipewright.empty() || a.seeds.empty() || a.runs < 1)
    usage("--pipewright, --seeds and --runs >= 1 are required");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  std::vector<Kind> chosen;
  for (const Kind& k : kinds())
    if (a.kinds.empty() || std::count(a.kinds.begin(), a.kinds.end(), k.name)) {
      if (!fs::exists(fs::path(a.seeds) / k.seed)) usage("no seed " + (fs::path(a.seeds) / k.seed).string());
      chosen.push_back(k);
    }
  if (chosen.empty()) usage("--kinds: no known kind");
  std::mt19937_64 rng(a.seed);
  const fs::path work = fs::temp_directory_path() / ("pw_cli_fuzz." + std::to_string(getpid()));
  fs::create_directories(work);
  if (!a.keep.empty()) fs::create_directories(a.keep);
  std::map<std::string, int> outcomes;  // "kind exit N" and finding classes
  std::map<std::string, int> findings;
  double slowest = 0;
  for (long run = 0; run < a.runs; ++run) {
    const Kind& k = chosen[static_cast<size_t>(run) % chosen.size()];
    const fs::path dir = work / "run", out = work / "run" / "out";
    fs::remove_all(dir);
    fs::create_directories(out);
    fs::path in = dir / fs::path(k.seed).filename();
    Mutant m;
    const fs::path seed = fs::path(a.seeds) / k.seed;
    if (fs::is_directory(seed)) {
      fs::copy(seed, in, fs::copy_options::recursive);
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(in)) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      const bool manifest = std::uniform_int_distribution<int>(0, 2)(rng) > 0;
      const fs::path f = manifest ? in / "manifest.json" : pick(rng, files);
      m = f.extension() == ".json" ? mutate_json(slurp(f), rng) : mutate_bytes(slurp(f), rng);
      m.what = f.filename().string() + ": " + m.what;
      spit(f, m.text);
    } else {
      const std::string text = slurp(seed);
      m = seed.extension() == ".csv"   ? mutate_csv(text, rng)
          : seed.extension() == ".txt" ? mutate_graph(text, rng)
                                       : mutate_json(text, rng);
      spit(in, m.text);
    }
    std::vector<std::string> argv{a.pipewright};
    for (std::string s : k.args) {
      for (const auto& [key, val] : std::vector<std::pair<std::string, std::string>>{
               {"{in}", in.string()}, {"{out}", out.string()}, {"{seeds}", a.seeds}})
        for (size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), val);
      argv.push_back(s);
    }
    const Outcome o = run_command(argv, dir / "stderr.txt", a.timeout_s);
    slowest = std::max(slowest, o.seconds);
    ++outcomes[k.name + " exit " + (o.timed_out ? "timeout" : std::to_string(o.exit_code))];
    std::vector<std::string> found;
    const long lines = std::count(o.err.begin(), o.err.end(), '\n');
    if (o.timed_out) found.push_back("hang");
    else if (o.exit_code < 0) found.push_back("crash");
    else if (o.exit_code == 70) found.push_back("internal");
    if (!o.timed_out && o.exit_code != 0) {
      if (lines != 1 || o.err.back() != '\n') found.push_back("lines");
      if (files_under(out) > 0) found.push_back("partial");
    }
    if (!o.timed_out && o.exit_code == 0 && m.beyond_limits) found.push_back("accepted");
    for (const std::string& f : found) {
      ++findings[f];
      const std::string first = o.err.substr(0, o.err.find('\n'));
      std::cout << "finding " << f << ": " << k.name << " run " << run << " (" << m.what.substr(0, 120) << "): exit "
                << (o.timed_out ? std::string("timeout") : std::to_string(o.exit_code)) << ", " << lines
                << " stderr lines: " << first.substr(0, 200) << "\n";
      if (!a.keep.empty()) {
        const fs::path to = fs::path(a.keep) / (k.name + "_" + std::to_string(run) + "_" + f);
        fs::remove_all(to);
        fs::copy(dir, to, fs::copy_options::recursive);
      }
    }
  }
  fs::remove_all(work);
  std::cout << "pw_cli_fuzz: " << a.runs << " runs, slowest " << slowest << " s; outcomes:";
  for (const auto& [k, n] : outcomes) std::cout << " [" << k << "] " << n;
  std::cout << "\npw_cli_fuzz: findings:";
  // Read with find(): operator[] would insert the zero counts and make every pass a failure.
  for (const char* f : {"crash", "internal", "hang", "lines", "partial", "accepted"}) {
    const auto it = findings.find(f);
    std::cout << " " << f << " " << (it == findings.end() ? 0 : it->second);
  }
  std::cout << "\n";
  return findings.empty() ? 0 : 1;
}
