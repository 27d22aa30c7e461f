#include "exec/data/data_images.h"

#include <cmath>

#include "exec/data/fast_normal.h"
#include "exec/data/seeded_source.h"
#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

namespace {

class ImagePatterns final : public SeededDataSource {
 public:
  ImagePatterns(std::vector<int64_t> shape, int64_t classes, uint64_t seed)
      : SeededDataSource(seed), shape_(std::move(shape)), classes_(classes), seed_(seed) {
    if (shape_.size() != 3 || shape_[0] < 1 || shape_[1] < 1 || shape_[2] < 1 || classes_ < 1)
      throw InputError("image patterns: expected an input of shape [c, h, w] and at least one class");
    per_ = shape_[0] * shape_[1] * shape_[2];
    patterns_.resize(static_cast<size_t>(classes_));
  }
  Batch next(int64_t batch) override {
    Batch b{Tensor({batch, shape_[0], shape_[1], shape_[2]}), Tensor({batch, 1})};
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t k = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(classes_)));
      const float a = static_cast<float>(0.5 + rng_.uniform());
      const float* p = pattern(k);
      float* x = b.data.data() + i * per_;
      for (int64_t e = 0; e < per_; ++e) x[e] = a * p[e] + 0.5f * approx_normal(rng_);
      b.targets.data()[i] = static_cast<float>(k);
    }
    ++batches_;
    return b;
  }
  std::string describe() const override {
    return "synthetic image patterns (approximately normal noise, " + std::to_string(classes_) + " classes, " +
           std::to_string(shape_[0]) + "x" + std::to_string(shape_[1]) + "x" + std::to_string(shape_[2]) + ")";
  }

 private:
  // Class k's pattern, made on first use: it depends on (seed, k) alone, so a class no batch
  // draws costs nothing (a 1000-class net at 224 x 224 would otherwise fill 600 MB with 300
  // million sines before its first step). A grating's sine depends on the pixel, not the
  // channel: one plane of sines per grating, scaled by each channel's weight.
  const float* pattern(int64_t k) {
    std::vector<float>& p = patterns_[static_cast<size_t>(k)];
    if (!p.empty()) return p.data();
    const int64_t c = shape_[0], h = shape_[1], w = shape_[2];
    p.assign(static_cast<size_t>(per_), 0.0f);
    std::vector<double> plane(static_cast<size_t>(h * w));
    constexpr double kTwoPi = 6.283185307179586;
    Rng r(mix_seed(seed_, 0x1A6E + static_cast<uint64_t>(k)));
    for (int g = 0; g < 2; ++g) {
      const double freq = 1.0 + 3.0 * r.uniform();  // cycles over the image
      const double angle = kTwoPi * r.uniform(), phase = kTwoPi * r.uniform();
      const double fx = freq * std::cos(angle) / static_cast<double>(w);
      const double fy = freq * std::sin(angle) / static_cast<double>(h);
      std::vector<double> chan(static_cast<size_t>(c));
      for (double& v : chan) v = r.uniform() * 2.0 - 1.0;
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) plane[y * w + x] = std::sin(kTwoPi * (fx * x + fy * y) + phase);
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t e = 0; e < h * w; ++e) p[ch * h * w + e] += static_cast<float>(chan[ch] * plane[e]);
    }
    return p.data();
  }

  std::vector<int64_t> shape_;
  int64_t classes_;
  uint64_t seed_;
  int64_t per_ = 0;
  std::vector<std::vector<float>> patterns_;  // by class; empty until first drawn
};

}  // namespace

std::unique_ptr<DataSource> make_image_patterns_source(std::vector<int64_t> image_shape, int64_t classes,
                                                       uint64_t seed) {
  return std::make_unique<ImagePatterns>(std::move(image_shape), classes, seed);
}

}  // namespace pw::exec
