#include "exec/data/npy_samples.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "exec/data/npy.h"
#include "models/error.h"

namespace pw::exec {

namespace {

constexpr int64_t kScanRows = 1 << 16;  // rows of class ids read at once by the range check

std::vector<int64_t> with_n(const std::vector<int64_t>& sample) {
  std::vector<int64_t> s{-1};
  s.insert(s.end(), sample.begin(), sample.end());
  return s;
}

// "[N, 3, 32, 32]"
std::string expected_text(const std::vector<int64_t>& sample) {
  std::string s = shape_text(with_n(sample));
  return "[N" + s.substr(3);
}

std::string number_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

bool shape_matches(const NpyHeader& h, const std::vector<int64_t>& sample) {
  return h.shape.size() == sample.size() + 1 && std::equal(sample.begin(), sample.end(), h.shape.begin() + 1);
}

class NpySamples final : public SampleReader {
 public:
  NpySamples(const std::string& inputs, const std::string& targets, const SampleSpec& spec)
      : x_(inputs), y_(targets), classes_(spec.classes) {
    const NpyHeader& hx = x_.header();
    if (!shape_matches(hx, spec.input_shape))
      throw InputError(inputs + ": shape " + expected_text(spec.input_shape) + " expected (model \"" + spec.model +
                       "\"'s input), got " + shape_text(hx.shape));
    if (hx.shape[0] < 1) throw InputError(inputs + ": no samples (shape " + shape_text(hx.shape) + ")");
    check_targets(spec);
    if (y_.header().shape[0] != hx.shape[0])
      throw InputError(targets + ": " + std::to_string(y_.header().shape[0]) + " samples, but " + inputs + " has " +
                       std::to_string(hx.shape[0]));
    if (classes_ > 0) check_class_ids();
  }
  int64_t samples() const override { return x_.header().shape[0]; }
  void read(int64_t i, float* input, float* target) const override {
    x_.read_rows(i, 1, input, true);
    y_.read_rows(i, 1, target, false);
  }
  std::string describe() const override {
    return "npy " + x_.name() + " " + shape_text(x_.header().shape) + " '" + x_.header().descr + "', " + y_.name() +
           " " + shape_text(y_.header().shape) + " '" + y_.header().descr + "'";
  }

 private:
  void check_targets(const SampleSpec& spec) const {
    const NpyHeader& hy = y_.header();
    if (classes_ > 0) {
      if (!shape_matches(hy, {}) && !shape_matches(hy, {1}))
        throw InputError(y_.name() + ": shape [N] of class ids expected (model \"" + spec.model +
                         "\" classifies), got " + shape_text(hy.shape));
      return;
    }
    if (hy.type != NpyType::f32 && hy.type != NpyType::f64)
      throw InputError(y_.name() + ": float targets expected (model \"" + spec.model + "\" regresses), got '" +
                       hy.descr + "'");
    if (!shape_matches(hy, spec.target_shape))
      throw InputError(y_.name() + ": shape " + expected_text(spec.target_shape) + " expected (model \"" + spec.model +
                       "\"'s prediction), got " + shape_text(hy.shape));
  }
  void check_class_ids() const {
    const int64_t n = y_.header().shape[0];
    std::vector<float> ids(static_cast<size_t>(std::min(n, kScanRows)));
    for (int64_t first = 0; first < n; first += kScanRows) {
      const int64_t count = std::min(kScanRows, n - first);
      y_.read_rows(first, count, ids.data(), false);
      for (int64_t r = 0; r < count; ++r) {
        const float v = ids[static_cast<size_t>(r)];
        if (!(v >= 0 && v < static_cast<float>(classes_)) || v != std::floor(v))
          throw InputError(y_.name() + ": class id " + number_text(v) + " at row " + std::to_string(first + r) +
                           " is out of range: the model has " + std::to_string(classes_) + " classes [0, " +
                           std::to_string(classes_) + ")");
      }
    }
  }

  NpyFile x_, y_;
  int64_t classes_;
};

}  // namespace

std::unique_ptr<SampleReader> open_npy_samples(const std::string& inputs, const std::string& targets,
                                               const SampleSpec& spec) {
  return std::make_unique<NpySamples>(inputs, targets, spec);
}

}  // namespace pw::exec
