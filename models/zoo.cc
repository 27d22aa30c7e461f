#include "models/zoo.h"

#include <string>

#include "models/error.h"
#include "models/error_text.h"

namespace pw::models {

namespace {

constexpr int64_t kMaxSize = int64_t{1} << 30;
constexpr int64_t kMaxLayers = 100000;

void check_range(const char* flag, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw InputError(std::string(flag) + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + std::to_string(v));
}

LayerSpec make(std::string name, LayerKind kind, std::vector<std::string> inputs, std::vector<int64_t> shape,
               std::map<std::string, int64_t> attrs = {}) {
  LayerSpec l;
  l.name = std::move(name);
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output_shape = std::move(shape);
  l.attrs = std::move(attrs);
  return l;
}

// A layer's output as seen by the layers that read it.
struct Out {
  std::string name;
  std::vector<int64_t> shape;
};

class Builder {
 public:
  Out add(std::string name, LayerKind kind, std::vector<std::string> inputs, std::vector<int64_t> shape,
          std::map<std::string, int64_t> attrs = {}) {
    layers_.push_back(make(name, kind, std::move(inputs), shape, std::move(attrs)));
    return {std::move(name), std::move(shape)};
  }
  // A layer reading only the previously added one (none for the first).
  Out chain(std::string name, LayerKind kind, std::vector<int64_t> shape, std::map<std::string, int64_t> attrs = {}) {
    std::vector<std::string> in;
    if (!layers_.empty()) in.push_back(layers_.back().name);
    return add(std::move(name), kind, std::move(in), std::move(shape), std::move(attrs));
  }
  std::vector<LayerSpec> take() { return std::move(layers_); }

 private:
  std::vector<LayerSpec> layers_;
};

Model build_gpt(const ZooOptions& o) {
  check_range("--layers", o.layers, 1, kMaxLayers);
  check_range("--d-model", o.d_model, 1, kMaxSize);
  check_range("--heads", o.heads, 1, kMaxSize);
  check_range("--ffn", o.ffn, 0, kMaxSize);
  check_range("--seq", o.seq, 1, kMaxSize);
  check_range("--vocab", o.vocab, 1, kMaxSize);
  if (o.d_model % o.heads != 0)
    throw InputError("--d-model: " + std::to_string(o.d_model) + " is not divisible by --heads " +
                     std::to_string(o.heads));
  const int64_t h = o.d_model, s = o.seq, v = o.vocab;
  const int64_t f = o.ffn == 0 ? 4 * h : o.ffn;
  Builder b;
  b.chain("input", LayerKind::input, {s}, {{"seq", s}, {"vocab", v}});
  b.chain("embedding", LayerKind::embedding, {s, h}, {{"vocab", v}, {"seq", s}, {"d_model", h}});
  for (int64_t i = 0; i < o.layers; ++i)
    b.chain("block" + std::to_string(i), LayerKind::transformer_block, {s, h},
            {{"seq", s}, {"d_model", h}, {"heads", o.heads}, {"ffn", f}});
  b.chain("final_norm", LayerKind::layer_norm, {s, h}, {{"dim", h}});
  b.chain("lm_head", LayerKind::lm_head, {s, v},
          {{"seq", s}, {"d_model", h}, {"vocab", v}, {"tied", o.tied_embeddings ? 1 : 0}});
  b.chain("loss", LayerKind::softmax_xent, {1}, {{"rows", s}, {"classes", v}});
  std::string name = "gpt-l" + std::to_string(o.layers) + "-d" + std::to_string(h);
  return Model(name, b.take(), o.batch);
}

Model build_mlp(const ZooOptions& o) {
  check_range("--depth", o.depth, 1, kMaxLayers);
  check_range("--width", o.width, 1, kMaxSize);
  const int64_t w = o.width;
  Builder b;
  b.chain("input", LayerKind::input, {w}, {{"dim", w}});
  for (int64_t i = 0; i < o.depth; ++i) {
    b.chain("fc" + std::to_string(i), LayerKind::linear, {w}, {{"in", w}, {"out", w}, {"bias", 1}});
    if (i + 1 < o.depth) b.chain("relu" + std::to_string(i), LayerKind::relu, {w});
  }
  b.chain("loss", LayerKind::mse_loss, {1}, {{"dim", w}});
  return Model("mlp-d" + std::to_string(o.depth) + "-w" + std::to_string(w), b.take(), o.batch);
}

int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

int64_t divided(int64_t channels, int64_t divisor) {
  int64_t c = channels / divisor;
  if (c < 1)
    throw InputError("--width-divisor: " + std::to_string(divisor) + " leaves a " + std::to_string(channels) +
                     "-channel layer with no channels");
  return c;
}

void check_conv_options(const ZooOptions& o) {
  check_range("--image", o.image, 32, 1 << 16);
  check_range("--width-divisor", o.width_divisor, 1, 64);
  check_range("--classes", o.classes, 1, kMaxSize);
}

// Layers over a [c, h, w] input.
Out conv(Builder& b, const Out& in, std::string name, int64_t out_c, int64_t kernel, int64_t stride, int64_t pad,
         bool bias) {
  const int64_t oh = window_out(in.shape[1], kernel, stride, pad);
  const int64_t ow = window_out(in.shape[2], kernel, stride, pad);
  return b.add(std::move(name), LayerKind::conv2d, {in.name}, {out_c, oh, ow},
               {{"in_c", in.shape[0]},
                {"out_c", out_c},
                {"kernel", kernel},
                {"stride", stride},
                {"pad", pad},
                {"in_h", in.shape[1]},
                {"in_w", in.shape[2]},
                {"bias", bias ? 1 : 0}});
}

Out pool(Builder& b, const Out& in, std::string name, LayerKind kind, int64_t kernel, int64_t stride, int64_t pad) {
  const int64_t oh = window_out(in.shape[1], kernel, stride, pad);
  const int64_t ow = window_out(in.shape[2], kernel, stride, pad);
  return b.add(std::move(name), kind, {in.name}, {in.shape[0], oh, ow},
               {{"c", in.shape[0]},
                {"kernel", kernel},
                {"stride", stride},
                {"pad", pad},
                {"in_h", in.shape[1]},
                {"in_w", in.shape[2]}});
}

Out relu(Builder& b, const Out& in, std::string name) {
  return b.add(std::move(name), LayerKind::relu, {in.name}, in.shape);
}

Out batch_norm(Builder& b, const Out& in, std::string name) {
  return b.add(std::move(name), LayerKind::batch_norm, {in.name}, in.shape,
               {{"c", in.shape[0]}, {"h", in.shape[1]}, {"w", in.shape[2]}});
}

// flatten, fully connected layers of the given widths with relu (and dropout) between, the
// classifier, loss.
void classifier_tail(Builder& b, const Out& in, const std::vector<int64_t>& hidden, int64_t classes, int first_fc,
                     int64_t dropout_permille = 0) {
  int64_t features = in.shape[0] * in.shape[1] * in.shape[2];
  Out x = b.add("flatten", LayerKind::flatten, {in.name}, {features});
  int n = first_fc;
  for (int64_t width : hidden) {
    x = b.add("fc" + std::to_string(n), LayerKind::linear, {x.name}, {width},
              {{"in", features}, {"out", width}, {"bias", 1}});
    x = relu(b, x, "relu" + std::to_string(n));
    if (dropout_permille > 0)
      x = b.add("drop" + std::to_string(n), LayerKind::dropout, {x.name}, x.shape, {{"permille", dropout_permille}});
    features = width;
    ++n;
  }
  x = b.add(first_fc < 0 ? std::string("fc") : "fc" + std::to_string(n), LayerKind::linear, {x.name}, {classes},
            {{"in", features}, {"out", classes}, {"bias", 1}});
  b.add("loss", LayerKind::softmax_xent, {x.name}, {1}, {{"rows", 1}, {"classes", classes}});
}

Out image_input(Builder& b, int64_t image) {
  return b.add("input", LayerKind::input, {}, {3, image, image}, {{"c", 3}, {"h", image}, {"w", image}});
}

Model build_vgg16(const ZooOptions& o) {
  check_conv_options(o);
  static const std::vector<std::vector<int64_t>> blocks = {
      {64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  Builder b;
  Out x = image_input(b, o.image);
  for (size_t k = 0; k < blocks.size(); ++k) {
    const std::string id = std::to_string(k + 1);
    for (size_t i = 0; i < blocks[k].size(); ++i) {
      const std::string tag = id + "_" + std::to_string(i + 1);
      x = conv(b, x, "conv" + tag, divided(blocks[k][i], o.width_divisor), 3, 1, 1, true);
      x = relu(b, x, "relu" + tag);
    }
    x = pool(b, x, "pool" + id, LayerKind::max_pool, 2, 2, 0);
  }
  const int64_t fc = divided(4096, o.width_divisor);
  check_range("--dropout-permille", o.dropout_permille, 0, 999);
  classifier_tail(b, x, {fc, fc}, o.classes, 6, o.dropout_permille);
  std::string name = "vgg16-i" + std::to_string(o.image);
  if (o.width_divisor != 1) name += "-w" + std::to_string(o.width_divisor);
  return Model(name, b.take(), o.batch);
}

Model build_resnet50(const ZooOptions& o) {
  check_conv_options(o);
  Builder b;
  Out x = image_input(b, o.image);
  x = conv(b, x, "conv1", divided(64, o.width_divisor), 7, 2, 3, false);
  x = batch_norm(b, x, "bn1");
  x = relu(b, x, "relu1");
  x = pool(b, x, "pool1", LayerKind::max_pool, 3, 2, 1);
  static const int64_t counts[] = {3, 4, 6, 3};
  static const int64_t mids[] = {64, 128, 256, 512};
  for (int k = 0; k < 4; ++k) {
    const int64_t mid = divided(mids[k], o.width_divisor), out = 4 * mid;
    for (int64_t i = 0; i < counts[k]; ++i) {
      const std::string p = "s" + std::to_string(k + 1) + "b" + std::to_string(i) + "_";
      const int64_t stride = (i == 0 && k > 0) ? 2 : 1;
      const Out block_in = x;
      x = conv(b, x, p + "conv_a", mid, 1, 1, 0, false);
      x = batch_norm(b, x, p + "bn_a");
      x = relu(b, x, p + "relu_a");
      x = conv(b, x, p + "conv_b", mid, 3, stride, 1, false);
      x = batch_norm(b, x, p + "bn_b");
      x = relu(b, x, p + "relu_b");
      x = conv(b, x, p + "conv_c", out, 1, 1, 0, false);
      x = batch_norm(b, x, p + "bn_c");
      Out shortcut = block_in;
      if (i == 0) {
        shortcut = conv(b, block_in, p + "proj", out, 1, stride, 0, false);
        shortcut = batch_norm(b, shortcut, p + "bn_proj");
      }
      PW_CHECK(shortcut.shape == x.shape, "resnet50 shortcut shape mismatch");
      x = b.add(p + "add", LayerKind::residual_add, {x.name, shortcut.name}, x.shape);
      x = relu(b, x, p + "out");
    }
  }
  x = pool(b, x, "avg_pool", LayerKind::avg_pool, x.shape[1], 1, 0);
  classifier_tail(b, x, {}, o.classes, -1);
  std::string name = "resnet50-i" + std::to_string(o.image);
  if (o.width_divisor != 1) name += "-w" + std::to_string(o.width_divisor);
  return Model(name, b.take(), o.batch);
}

Model build_densenet121(const ZooOptions& o) {
  check_conv_options(o);
  const int64_t growth = divided(32, o.width_divisor);
  Builder b;
  Out x = image_input(b, o.image);
  x = conv(b, x, "conv0", divided(64, o.width_divisor), 7, 2, 3, false);
  x = batch_norm(b, x, "bn0");
  x = relu(b, x, "relu0");
  x = pool(b, x, "pool0", LayerKind::max_pool, 3, 2, 1);
  static const int64_t counts[] = {6, 12, 24, 16};
  for (int k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < counts[k]; ++i) {
      const std::string p = "d" + std::to_string(k + 1) + "l" + std::to_string(i) + "_";
      Out y = batch_norm(b, x, p + "bn_a");
      y = relu(b, y, p + "relu_a");
      y = conv(b, y, p + "conv_a", 4 * growth, 1, 1, 0, false);
      y = batch_norm(b, y, p + "bn_b");
      y = relu(b, y, p + "relu_b");
      y = conv(b, y, p + "conv_b", growth, 3, 1, 1, false);
      x = b.add(p + "cat", LayerKind::concat, {x.name, y.name}, {x.shape[0] + growth, x.shape[1], x.shape[2]});
    }
    if (k < 3) {
      const std::string p = "t" + std::to_string(k + 1) + "_";
      x = batch_norm(b, x, p + "bn");
      x = relu(b, x, p + "relu");
      x = conv(b, x, p + "conv", x.shape[0] / 2, 1, 1, 0, false);
      x = pool(b, x, p + "pool", LayerKind::avg_pool, 2, 2, 0);
    }
  }
  x = batch_norm(b, x, "bn5");
  x = relu(b, x, "relu5");
  x = pool(b, x, "avg_pool", LayerKind::avg_pool, x.shape[1], 1, 0);
  classifier_tail(b, x, {}, o.classes, -1);
  std::string name = "densenet121-i" + std::to_string(o.image);
  if (o.width_divisor != 1) name += "-w" + std::to_string(o.width_divisor);
  return Model(name, b.take(), o.batch);
}

}  // namespace

const std::vector<std::string_view>& zoo_families() {
  static const std::vector<std::string_view> families = {"gpt", "mlp", "vgg16", "resnet50", "densenet121"};
  return families;
}

Model build_zoo_model(std::string_view family, const ZooOptions& o) {
  check_range("--batch", o.batch, 1, kMaxSize);
  if (family == "gpt") return build_gpt(o);
  if (family == "mlp") return build_mlp(o);
  if (family == "vgg16") return build_vgg16(o);
  if (family == "resnet50") return build_resnet50(o);
  if (family == "densenet121") return build_densenet121(o);
  std::string known;
  for (auto f : zoo_families()) known += (known.empty() ? "" : ", ") + std::string(f);
  throw InputError("unknown model family \"" + escape_for_message(family) + "\" (known: " + known + ")");
}

ZooOptions default_model_options() {
  ZooOptions o;
  o.layers = 4;
  o.d_model = 128;
  o.heads = 4;
  o.ffn = 512;
  o.seq = 64;
  o.vocab = 256;
  o.batch = 16;
  return o;
}

Model default_model() { return build_gpt(default_model_options()); }

}  // namespace pw::models
