#include "exec/data/data.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "exec/data/cifar.h"
#include "exec/data/data_images.h"
#include "exec/data/fast_normal.h"
#include "exec/data/fast_tanh.h"
#include "exec/data/npy_samples.h"
#include "exec/data/sample_source.h"
#include "exec/data/seeded_source.h"
#include "exec/layers/common.h"
#include "models/error.h"
#include "models/input_file.h"

namespace pw::exec {

namespace {

using models::LayerKind;

class TextSource : public SeededDataSource {
 public:
  TextSource(std::string file, std::string bytes, int64_t seq, int64_t vocab, uint64_t seed)
      : SeededDataSource(seed), file_(std::move(file)), bytes_(std::move(bytes)), seq_(seq), vocab_(vocab) {}
  Batch next(int64_t batch) override {
    ++batches_;
    Batch b{Tensor({batch, seq_}), Tensor({batch, seq_})};
    const uint64_t span = bytes_.size() - static_cast<uint64_t>(seq_);
    for (int64_t i = 0; i < batch; ++i) {
      const uint64_t off = rng_.below(span);
      for (int64_t s = 0; s < seq_; ++s) {
        b.data.data()[i * seq_ + s] = token(off + s);
        b.targets.data()[i * seq_ + s] = token(off + s + 1);
      }
    }
    return b;
  }
  std::string describe() const override { return "text " + file_ + " (" + std::to_string(bytes_.size()) + " bytes)"; }

 private:
  float token(uint64_t i) const { return static_cast<float>(static_cast<unsigned char>(bytes_[i]) % vocab_); }
  std::string file_, bytes_;
  int64_t seq_, vocab_;
};

// y = f(W x) with a fixed random teacher W = U V of rank r = min(kTeacherRank, in, out):
// V [r, in] ~ N(0, 1/in), U [out, r] ~ N(0, 1/r), so (W x)_o has variance ~1 for x ~ N(0, 1), as
// a dense N(0, 1/in) teacher would give, at r (in + out) multiply-adds a sample instead of
// in x out (the dense product was ~200 ms a mini-batch for mlp 8x1024, batch 256). Float
// arithmetic in loops that vectorize without reordering a sum, so results do not depend on
// the vector width chosen by the compiler beyond what the binary fixes.
constexpr int64_t kTeacherRank = 32;

class TeacherSource : public SeededDataSource {
 public:
  // classify: classification into `out` classes (argmax); else regression to tanh of `out` values.
  TeacherSource(std::vector<int64_t> in_shape, std::vector<int64_t> out_shape, int64_t out, bool classify,
                uint64_t seed)
      : SeededDataSource(seed),
        in_shape_(std::move(in_shape)),
        out_shape_(std::move(out_shape)),
        out_(out),
        classify_(classify) {
    in_ = 1;
    for (int64_t d : in_shape_) in_ *= d;
    rank_ = std::min({kTeacherRank, in_, out_});
    Rng t(mix_seed(seed, 0x7EAC4E5));
    vt_.resize(static_cast<size_t>(in_ * rank_));   // V transposed: [in, r]
    ut_.resize(static_cast<size_t>(rank_ * out_));  // U transposed: [r, out]
    fill_approx_normal(vt_.data(), in_ * rank_, t, static_cast<float>(1.0 / std::sqrt(static_cast<double>(in_))));
    fill_approx_normal(ut_.data(), rank_ * out_, t, static_cast<float>(1.0 / std::sqrt(static_cast<double>(rank_))));
  }
  Batch next(int64_t batch) override {
    ++batches_;
    Tensor x(with_batch(batch, in_shape_));
    fill_approx_normal(x.data(), x.numel(), rng_);
    Tensor y = classify_ ? Tensor({batch, 1}) : Tensor({batch, out_});
    std::vector<float> h(static_cast<size_t>(rank_)), z(static_cast<size_t>(out_));
    for (int64_t b = 0; b < batch; ++b) {
      const float* xb = x.data() + b * in_;
      std::fill(h.begin(), h.end(), 0.0f);
      for (int64_t k = 0; k < in_; ++k) {
        const float* v = vt_.data() + k * rank_;
        for (int64_t j = 0; j < rank_; ++j) h[j] += v[j] * xb[k];
      }
      std::fill(z.begin(), z.end(), 0.0f);
      for (int64_t j = 0; j < rank_; ++j) {
        const float* u = ut_.data() + j * out_;
        for (int64_t o = 0; o < out_; ++o) z[o] += u[o] * h[j];
      }
      if (classify_) {
        int64_t best = 0;
        for (int64_t o = 1; o < out_; ++o)
          if (z[o] > z[best]) best = o;
        y.data()[b] = static_cast<float>(best);
      } else {
        float* yb = y.data() + b * out_;
        for (int64_t o = 0; o < out_; ++o) yb[o] = fast_tanh(z[o]);
      }
    }
    if (!classify_) y.reshape(with_batch(batch, out_shape_));
    return {std::move(x), std::move(y)};
  }
  std::string describe() const override {
    // The teacher's rank is named: it changes the data (a checkpoint's identity records this).
    const std::string teacher = "random rank-" + std::to_string(rank_) + " teacher";
    return classify_ ? "synthetic classification (" + std::to_string(out_) + " classes, " + teacher + ")"
                     : "synthetic regression (" + std::to_string(out_) + " outputs, " + teacher + ")";
  }

 private:
  std::vector<int64_t> in_shape_, out_shape_;
  int64_t in_ = 1, out_, rank_ = 1;
  bool classify_;
  std::vector<float> vt_, ut_;
};

std::string read_text(const std::string& file, const std::string& flag) {
  try {
    return read_input_file(file);  // regular file, non-empty, size-capped (models/input_file.h)
  } catch (const InputError& e) { throw InputError(flag + ": data file " + e.what()); }
}

std::vector<std::string> split_files(const std::string& data) {
  std::vector<std::string> files;
  size_t start = 0;
  for (size_t comma; (comma = data.find(',', start)) != std::string::npos; start = comma + 1)
    files.push_back(data.substr(start, comma - start));
  files.push_back(data.substr(start));
  return files;
}

// --data for a model without an embedding: "INPUTS.npy,TARGETS.npy" or "A.bin[,B.bin...]"
// (CIFAR-10 batches). Every error names `flag` and the file.
std::unique_ptr<DataSource> open_sample_files(const models::Model& model, const models::LayerSpec& input,
                                              const models::LayerSpec& loss, const models::LayerSpec& pred,
                                              const std::string& data, uint64_t seed, const std::string& flag) {
  SampleSpec spec;
  spec.model = model.name();
  spec.input_shape = input.output_shape;
  if (loss.kind == LayerKind::softmax_xent) {
    if (loss.attr_or("rows", 1) != 1)
      throw InputError(flag + ": layer \"" + loss.name +
                       "\": training from files needs rows = 1 (one class per sample)");
    spec.classes = loss.attr("classes");
  } else {
    spec.target_shape = pred.output_shape;
  }
  const std::vector<std::string> files = split_files(data);
  const auto all_end_with = [&](const std::string& ext) {
    return std::all_of(files.begin(), files.end(), [&](const std::string& f) {
      return f.size() > ext.size() && f.compare(f.size() - ext.size(), ext.size(), ext) == 0;
    });
  };
  try {
    if (files.size() == 2 && all_end_with(".npy"))
      return make_sample_source(open_npy_samples(files[0], files[1], spec), spec, seed);
    if (!files.empty() && all_end_with(".bin")) return make_sample_source(open_cifar_samples(files, spec), spec, seed);
  } catch (const InputError& e) { throw InputError(flag + ": " + e.what()); }
  throw InputError(flag + ": expected INPUTS.npy,TARGETS.npy or CIFAR-10 batches FILE.bin[,FILE.bin...] for model \"" +
                   model.name() + "\", got \"" + data + "\" (a text file applies to models with an embedding)");
}

}  // namespace

std::unique_ptr<DataSource> make_data_source(const models::Model& model, const std::string& text_file, uint64_t seed,
                                             const std::string& flag) {
  const models::LayerSpec* input = nullptr;
  const models::LayerSpec* loss = nullptr;
  const models::LayerSpec* embedding = nullptr;
  for (const auto& l : model.layers()) {
    if (l.kind == LayerKind::input && !input) input = &l;
    if (l.kind == LayerKind::embedding && !embedding) embedding = &l;
    if (l.kind == LayerKind::softmax_xent || l.kind == LayerKind::mse_loss) loss = &l;
  }
  if (!input) throw InputError("model \"" + model.name() + "\": no input layer to feed data to");
  if (!loss) throw InputError("model \"" + model.name() + "\": no loss layer (softmax_xent or mse_loss) to train");
  const models::LayerSpec& pred = model.layers().at(model.index_of(loss->inputs.at(0)));
  if (loss->kind == LayerKind::softmax_xent && embedding) {
    const std::string file = text_file.empty() ? kDefaultTextFile : text_file;
    std::string bytes = read_text(file, flag);
    const int64_t seq = embedding->attr("seq");
    if (static_cast<int64_t>(bytes.size()) < seq + 2)
      throw InputError(flag + ": data file \"" + file + "\" has " + std::to_string(bytes.size()) +
                       " bytes, fewer than the sequence length + 2 (" + std::to_string(seq + 2) + ")");
    return std::make_unique<TextSource>(file, std::move(bytes), seq, embedding->attr("vocab"), seed);
  }
  if (!text_file.empty()) return open_sample_files(model, *input, *loss, pred, text_file, seed, flag);
  if (loss->kind == LayerKind::softmax_xent) {
    if (loss->attr_or("rows", 1) != 1)
      throw InputError("layer \"" + loss->name + "\": synthetic classification needs rows = 1");
    if (input->output_shape.size() == 3)  // images: class-dependent patterns (exec/data/data_images.h)
      return make_image_patterns_source(input->output_shape, loss->attr("classes"), seed);
    return std::make_unique<TeacherSource>(input->output_shape, std::vector<int64_t>{1}, loss->attr("classes"), true,
                                           seed);
  }
  return std::make_unique<TeacherSource>(input->output_shape, pred.output_shape, pred.output_elements(), false, seed);
}

}  // namespace pw::exec
