#include "exec/data/sample_source.h"

#include <numeric>

#include "exec/layers/common.h"
#include "models/error.h"

namespace pw::exec {

int64_t SampleSpec::input_elements() const {
  int64_t n = 1;
  for (int64_t d : input_shape) n *= d;
  return n;
}

int64_t SampleSpec::target_elements() const {
  if (classes > 0) return 1;
  int64_t n = 1;
  for (int64_t d : target_shape) n *= d;
  return n;
}

namespace {

class SampleSource final : public DataSource {
 public:
  SampleSource(std::unique_ptr<SampleReader> reader, SampleSpec spec, uint64_t seed)
      : reader_(std::move(reader)), spec_(std::move(spec)), seed_(seed), n_(reader_->samples()) {
    PW_CHECK(n_ > 0, "a sample file with no samples");
  }
  Batch next(int64_t batch) override {
    const int64_t in = spec_.input_elements(), out = spec_.target_elements();
    Batch b{Tensor(with_batch(batch, spec_.input_shape)),
            spec_.classes > 0 ? Tensor({batch, 1}) : Tensor(with_batch(batch, spec_.target_shape))};
    for (int64_t r = 0; r < batch; ++r, ++drawn_)
      reader_->read(sample_at(drawn_), b.data.data() + r * in, b.targets.data() + r * out);
    ++batches_;
    return b;
  }
  std::string describe() const override { return reader_->describe(); }
  DataState state() const override { return {static_cast<uint64_t>(drawn_), batches_}; }
  void restore(const DataState& s) override {
    // A checkpoint's position (whose checksum anyone can recompute): a count of samples drawn this
    // source can go on from, or sample_at would index outside the permutation.
    if (s.rng > kMaxDrawn || s.batches < 0)
      throw InputError("--resume: the checkpoint's data position (" + std::to_string(s.rng) + " samples, " +
                       std::to_string(s.batches) + " batches drawn) is not one " + reader_->describe() +
                       " can be at (at most " + std::to_string(kMaxDrawn) + " samples)");
    drawn_ = static_cast<int64_t>(s.rng);
    batches_ = s.batches;
  }

 private:
  // Samples drawn: far beyond any run's, and far enough below int64's end that drawing goes on.
  static constexpr uint64_t kMaxDrawn = uint64_t{1} << 62;
  // The epoch's permutation: Fisher-Yates with the generator of (seed, epoch).
  int64_t sample_at(int64_t k) {
    const int64_t epoch = k / n_;
    if (epoch != epoch_) {
      order_.resize(static_cast<size_t>(n_));
      std::iota(order_.begin(), order_.end(), int64_t{0});
      Rng rng(mix_seed(seed_, 0xE90C0000ULL + static_cast<uint64_t>(epoch)));
      for (int64_t i = n_ - 1; i > 0; --i)
        std::swap(order_[static_cast<size_t>(i)], order_[rng.below(static_cast<uint64_t>(i + 1))]);
      epoch_ = epoch;
    }
    return order_[static_cast<size_t>(k % n_)];
  }

  std::unique_ptr<SampleReader> reader_;
  SampleSpec spec_;
  uint64_t seed_;
  int64_t n_;
  int64_t drawn_ = 0, batches_ = 0, epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace

std::unique_ptr<DataSource> make_sample_source(std::unique_ptr<SampleReader> reader, const SampleSpec& spec,
                                               uint64_t seed) {
  return std::make_unique<SampleSource>(std::move(reader), spec, seed);
}

}  // namespace pw::exec
