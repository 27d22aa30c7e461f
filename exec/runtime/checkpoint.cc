#include "exec/runtime/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include "models/error.h"
#include "models/limits.h"
#include "models/temp_registry.h"

namespace pw::exec {

namespace fs = std::filesystem;

namespace {

constexpr char kCheckpointMagic[8] = {'P', 'W', 'C', 'K', 'P', 'T', '0', '1'};
constexpr const char* kManifest = "manifest.json";
constexpr int64_t kManifestMaxBytes = 4 << 20;
// Steps a run can complete: its steps and warm-up steps (models/limits.h).
constexpr int64_t kMaxCheckpointStep = models::limits::kSteps.max + models::limits::kWarmupSteps.max;
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t parse_hex64(const std::string& s, const std::string& what) {
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw InputError(what + ": expected 16 hex digits, got \"" + s.substr(0, 40) + "\"");
  return std::stoull(s, nullptr, 16);
}

std::string stage_file_name(int stage, int64_t step) {
  return "stage-" + std::to_string(stage) + ".step-" + std::to_string(step) + ".bin";
}

void fsync_dir(const std::string& dir, const std::string& flag) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw InputError(flag + " " + dir + ": cannot open the directory to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw InputError(flag + " " + dir + ": cannot sync the directory");
}

// Buffered writer to a temporary file that is fsynced and renamed into place by commit(). The
// temporary is in the table that signal handlers sweep (models/temp_registry.h).
class AtomicBlobWriter {
 public:
  AtomicBlobWriter(fs::path target, std::string flag) : target_(std::move(target)), flag_(std::move(flag)) {
    TempFile t;
    try {
      t = create_temp_file(target_.string());
    } catch (const InputError& e) { throw InputError(flag_ + " " + e.what()); }
    fd_ = t.fd;
    tmp_ = t.name;
    buf_.reserve(1 << 20);
  }
  ~AtomicBlobWriter() {
    if (fd_ >= 0) {
      ::close(fd_);
      unlink_temp_file(tmp_);
    }
  }
  void put(const void* data, size_t n) {
    hash_ = fnv1a(hash_, data, n);
    bytes_ += static_cast<int64_t>(n);
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const size_t take = std::min(n, buf_.capacity() - buf_.size());
      buf_.insert(buf_.end(), p, p + take);
      p += take;
      n -= take;
      if (buf_.size() == buf_.capacity()) flush();
    }
  }
  template <class T>
  void put_value(T v) {
    put(&v, sizeof v);
  }
  uint64_t hash() const { return hash_; }
  int64_t bytes() const { return bytes_; }
  void commit() {
    flush();
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
      fd_ = -1;
      unlink_temp_file(tmp_);
      throw InputError(flag_ + " " + target_.string() + ": write failed");
    }
    fd_ = -1;
    ::chmod(tmp_.c_str(), 0644);
    if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
      unlink_temp_file(tmp_);
      throw InputError(flag_ + " " + target_.string() + ": cannot rename the temporary file into place");
    }
    release_temp_file(tmp_);
  }

 private:
  void flush() {
    size_t done = 0;
    while (done < buf_.size()) {
      const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
      if (n <= 0) throw InputError(flag_ + " " + target_.string() + ": write failed (disk full?)");
      done += static_cast<size_t>(n);
    }
    buf_.clear();
  }
  fs::path target_;
  std::string flag_, tmp_;
  int fd_ = -1;
  std::vector<char> buf_;
  uint64_t hash_ = kFnvOffset;
  int64_t bytes_ = 0;
};

// Bytes of a stage file holding exactly `s`'s tensors.
int64_t expected_bytes(const StageState& s) {
  int64_t b = 8 + 4 + 4 + 8 + 8 + 8;
  for (const auto& [name, t] : s.tensors)
    b += 4 + static_cast<int64_t>(name.size()) + 4 + 8 * static_cast<int64_t>(t->shape().size()) + t->bytes();
  return b + 8;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string short_dump(const Json& j) {
  std::string s = j.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// First difference between the checkpoint's identity `a` and this run's `b`, as a message.
std::string first_difference(const Json& a, const Json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const std::string p = path.empty() ? k : path + "/" + k;
      if (!a.contains(k)) return "this run has " + p + " = " + short_dump(b[k]) + ", the checkpoint has none";
      if (!b.contains(k)) return "the checkpoint has " + p + " = " + short_dump(a[k]) + ", this run has none";
      std::string d = first_difference(a[k], b[k], p);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a == b) return "";
  return "the checkpoint's " + path + " is " + short_dump(a) + ", this run's is " + short_dump(b);
}

// Reads exactly n bytes; false on a short read.
bool read_exact(std::FILE* f, void* dst, size_t n, uint64_t* hash) {
  if (std::fread(dst, 1, n, f) != n) return false;
  *hash = fnv1a(*hash, dst, n);
  return true;
}

}  // namespace

void add_layer_parameters(Network& net, int begin, int end, StageState& s) {
  for (int l = begin; l < end; ++l) {
    const std::vector<Tensor*> ps = net.layer(l).parameters();
    for (size_t k = 0; k < ps.size(); ++k) s.tensors.emplace_back(net.layer(l).name() + "/" + std::to_string(k), ps[k]);
  }
}

void add_optimizer_state(std::vector<std::pair<std::string, Tensor*>> state, StageState& s) {
  for (auto& [name, t] : state) s.tensors.emplace_back("opt/" + name, t);
}

namespace {

// Checksum of the data loader's position, tied to the step and to the stage files it goes
// with: an edited rng_state or batch count, or a data block copied from another checkpoint,
// no longer matches.
std::string data_checksum(const DataState& data, int64_t step, const std::vector<std::string>& stage_hashes) {
  std::string text = hex64(data.rng) + ":" + std::to_string(data.batches) + ":" + std::to_string(step);
  for (const std::string& h : stage_hashes) text += ":" + h;
  return hex64(fnv1a(kFnvOffset, text.data(), text.size()));
}

// Index of the first NaN or infinity among n floats, or -1.
int64_t first_non_finite(const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return i;
  return -1;
}

}  // namespace

std::string model_hash(const models::Model& model) {
  Json j;
  to_json(j, model);
  const std::string s = j.dump();
  return hex64(fnv1a(kFnvOffset, s.data(), s.size()));
}

Json checkpoint_identity(const models::Model& model, Json layout, Json options) {
  return Json{{"model", {{"name", model.name()}, {"hash", model_hash(model)}}},
              {"layout", std::move(layout)},
              {"options", std::move(options)}};
}

CheckpointWriter::CheckpointWriter(std::string dir, int64_t step, std::string flag)
    : dir_(std::move(dir)), flag_(std::move(flag)), step_(step) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw InputError(flag_ + " " + dir_ + ": cannot create the directory");
  // Stray temporaries of an interrupted earlier save.
  static const std::regex kTemp(R"(\.(stage-\d+\.step-\d+\.bin|manifest\.json)\.tmp.*)");
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (std::regex_match(e.path().filename().string(), kTemp)) fs::remove(e.path(), ec);
}

void CheckpointWriter::add_stage(const StageState& st) {
  PW_CHECK(!committed_, "checkpoint: a stage added after the commit");
  const size_t s = files_.size();
  const std::string name = stage_file_name(static_cast<int>(s), step_);
  AtomicBlobWriter w(fs::path(dir_) / name, flag_);
  w.put(kCheckpointMagic, sizeof kCheckpointMagic);
  w.put_value<uint32_t>(static_cast<uint32_t>(s));
  w.put_value<uint32_t>(static_cast<uint32_t>(st.tensors.size()));
  w.put_value<int64_t>(step_);
  w.put_value<int64_t>(st.optimizer_steps);
  w.put_value<int64_t>(st.weight_version);
  for (const auto& [tname, t] : st.tensors) {
    w.put_value<uint32_t>(static_cast<uint32_t>(tname.size()));
    w.put(tname.data(), tname.size());
    w.put_value<uint32_t>(static_cast<uint32_t>(t->shape().size()));
    for (int64_t d : t->shape()) w.put_value<int64_t>(d);
    w.put(t->data(), static_cast<size_t>(t->bytes()));
  }
  const uint64_t h = w.hash();
  w.put_value<uint64_t>(h);
  w.commit();
  files_.push_back({{"stage", s}, {"file", name}, {"bytes", w.bytes()}, {"fnv1a64", hex64(h)}});
  stage_hashes_.push_back(hex64(h));
}

void CheckpointWriter::commit(const Json& identity, const DataState& data) {
  PW_CHECK(!committed_, "checkpoint: committed twice");
  committed_ = true;
  Json m{{"format", format_tag("checkpoint", 1)},
         {"step", step_},
         {"identity", identity},
         {"data",
          {{"rng_state", hex64(data.rng)},
           {"batches", data.batches},
           {"fnv1a64", data_checksum(data, step_, stage_hashes_)}}},
         {"stages", files_}};
  try {
    save_json_file((fs::path(dir_) / kManifest).string(), m);
  } catch (const InputError& e) { throw InputError(flag_ + " " + e.what()); }
  fsync_dir(dir_, flag_);
  // The new checkpoint is complete: older stage files can go.
  std::set<std::string> keep{kManifest};
  for (const Json& f : files_) keep.insert(f["file"].get<std::string>());
  static const std::regex kStage(R"(stage-\d+\.step-\d+\.bin)");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (std::regex_match(n, kStage) && !keep.count(n)) fs::remove(e.path(), ec);
  }
}

void save_checkpoint(const std::string& dir, const Json& identity, int64_t step, const DataState& data,
                     const std::vector<StageState>& stages, const std::string& flag) {
  CheckpointWriter w(dir, step, flag);
  for (const StageState& st : stages) w.add_stage(st);
  w.commit(identity, data);
}

CheckpointInfo open_checkpoint(const std::string& dir, const Json& identity, int num_stages, const std::string& flag) {
  const std::string at = flag + " " + dir;
  if (!fs::is_directory(dir)) throw InputError(at + ": not a directory");
  const fs::path mpath = fs::path(dir) / kManifest;
  std::error_code ec;
  if (!fs::is_regular_file(mpath, ec))
    throw InputError(at + ": no checkpoint there (" + mpath.string() + " is missing)");
  const auto size = fs::file_size(mpath, ec);
  if (ec || size > static_cast<uintmax_t>(kManifestMaxBytes))
    throw InputError(at + ": " + mpath.string() + " is larger than " + std::to_string(kManifestMaxBytes) + " bytes");
  CheckpointInfo info;
  try {
    const Json m = load_json_file(mpath.string());
    check_format(m, "checkpoint", 1, "");
    info.step = models::get_limited(m, "step", "", {0, kMaxCheckpointStep});
    info.identity = require_field(m, "identity", "");
    const Json& d = require_field(m, "data", "");
    info.data.rng = parse_hex64(get_string(d, "rng_state", "/data"), "/data/rng_state");
    info.data.batches = get_int(d, "batches", "/data", 0);
    const std::string data_sum = get_string(d, "fnv1a64", "/data");
    const Json& st = require_array(m, "stages", "");
    for (size_t i = 0; i < st.size(); ++i) {
      const std::string p = join_path("/stages", i);
      CheckpointStageFile f;
      f.stage = models::get_limited_int(st[i], "stage", p, {0, models::limits::kStages.max - 1});
      f.file = get_string(st[i], "file", p);
      f.bytes = models::get_limited(st[i], "bytes", p, models::limits::kBytes);
      f.fnv1a64 = get_string(st[i], "fnv1a64", p);
      parse_hex64(f.fnv1a64, p + "/fnv1a64");
      if (f.stage != static_cast<int>(i) || f.file != stage_file_name(f.stage, info.step))
        throw InputError(p + ": expected stage " + std::to_string(i) + " in \"" +
                         stage_file_name(static_cast<int>(i), info.step) + "\"");
      info.stages.push_back(f);
    }
    std::vector<std::string> stage_hashes;
    for (const CheckpointStageFile& f : info.stages) stage_hashes.push_back(f.fnv1a64);
    if (data_sum != data_checksum(info.data, info.step, stage_hashes))
      throw InputError(
          "/data: rng_state and batches do not match their checksum /data/fnv1a64 (edited, or from "
          "another checkpoint)");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    throw InputError(at + ": " + (msg.rfind(mpath.string(), 0) == 0 ? msg : mpath.string() + ": " + msg));
  }
  const std::string diff = first_difference(info.identity, identity, "");
  if (!diff.empty()) throw InputError(at + ": the checkpoint is of another run: " + diff);
  if (static_cast<int>(info.stages.size()) != num_stages)
    throw InputError(at + ": the checkpoint has " + std::to_string(info.stages.size()) + " stage files, this run " +
                     std::to_string(num_stages) + " stages");
  return info;
}

void load_stage(const std::string& dir, const CheckpointInfo& info, int stage, StageState& into,
                const std::string& flag) {
  const CheckpointStageFile& f = info.stages.at(stage);
  const std::string file = (fs::path(dir) / f.file).string();
  const std::string at = flag + " " + file;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw InputError(at + ": missing (the manifest names it)");
  const int64_t want = expected_bytes(into);
  const int64_t have = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec) throw InputError(at + ": cannot read its size");
  if (have != want || have != f.bytes)
    throw InputError(at + ": " + (have < want ? "truncated: " : "wrong size: ") + std::to_string(have) +
                     " bytes, expected " + std::to_string(want) + " for this run's stage " + std::to_string(stage) +
                     " (manifest: " + std::to_string(f.bytes) + ")");
  std::FILE* fp = std::fopen(file.c_str(), "rb");
  if (!fp) throw InputError(at + ": cannot open");
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{fp};
  uint64_t h = kFnvOffset;
  auto need = [&](void* dst, size_t n, const char* what) {
    if (!read_exact(fp, dst, n, &h)) throw InputError(at + ": truncated in " + what);
  };
  char magic[8];
  need(magic, sizeof magic, "the header");
  if (std::memcmp(magic, kCheckpointMagic, sizeof magic) != 0)
    throw InputError(at + ": not a pipewright checkpoint stage file");
  uint32_t st = 0, count = 0;
  int64_t step = 0, opt_steps = 0, version = 0;
  need(&st, 4, "the header");
  need(&count, 4, "the header");
  need(&step, 8, "the header");
  need(&opt_steps, 8, "the header");
  need(&version, 8, "the header");
  if (static_cast<int>(st) != stage || step != info.step || count != into.tensors.size())
    throw InputError(at + ": header says stage " + std::to_string(st) + ", step " + std::to_string(step) + ", " +
                     std::to_string(count) + " tensors; expected stage " + std::to_string(stage) + ", step " +
                     std::to_string(info.step) + ", " + std::to_string(into.tensors.size()) + " tensors");
  if (opt_steps < 0 || version < 0) throw InputError(at + ": negative counters in the header");
  for (auto& [name, t] : into.tensors) {
    uint32_t len = 0;
    need(&len, 4, "a tensor name");
    if (len != name.size())
      throw InputError(at + ": expected tensor \"" + name + "\", found a name of " + std::to_string(len) + " bytes");
    std::string got(len, '\0');
    need(got.data(), len, "a tensor name");
    if (got != name) throw InputError(at + ": expected tensor \"" + name + "\", found another name");
    uint32_t rank = 0;
    need(&rank, 4, "a tensor shape");
    if (rank != t->shape().size())
      throw InputError(at + ": tensor \"" + name + "\" has rank " + std::to_string(rank) + ", expected " +
                       shape_str(t->shape()));
    std::vector<int64_t> dims(rank);
    need(dims.data(), 8 * rank, "a tensor shape");
    if (dims != t->shape())
      throw InputError(at + ": tensor \"" + name + "\" is " + shape_str(dims) + ", expected " + shape_str(t->shape()));
    need(t->data(), static_cast<size_t>(t->bytes()), "tensor values");
    if (const int64_t bad = first_non_finite(t->data(), t->numel()); bad >= 0)
      throw InputError(at + ": tensor \"" + name + "\" holds " + (std::isnan(t->data()[bad]) ? "NaN" : "an infinity") +
                       " at element " + std::to_string(bad) + " (a checkpoint holds finite values only)");
  }
  const uint64_t computed = h;
  uint64_t stored = 0;
  need(&stored, 8, "the checksum");
  if (stored != computed || hex64(computed) != f.fnv1a64)
    throw InputError(at + ": checksum mismatch (the file is corrupt)");
  into.optimizer_steps = opt_steps;
  into.weight_version = version;
}

int64_t checkpoint_step(const std::string& dir) {
  std::error_code ec;
  const fs::path mpath = fs::path(dir) / kManifest;
  if (!fs::is_regular_file(mpath, ec)) return -1;
  try {
    const Json m = load_json_file(mpath.string());
    return get_int(m, "step", "", 0);
  } catch (const InputError&) { return -1; }
}

}  // namespace pw::exec
