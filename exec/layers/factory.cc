// make_layer: LayerSpec -> executable Layer, with attribute and shape validation.
#include <sstream>

#include "exec/layer.h"
#include "exec/layers/attention.h"
#include "exec/layers/batch_norm.h"
#include "exec/layers/concat.h"
#include "exec/layers/conv.h"
#include "exec/layers/dropout.h"
#include "exec/layers/elementwise.h"
#include "exec/layers/embedding.h"
#include "exec/layers/layer_norm.h"
#include "exec/layers/linear.h"
#include "exec/layers/losses.h"
#include "exec/layers/pooling.h"
#include "exec/layers/transformer_block.h"
#include "models/error.h"

namespace pw::exec {

namespace {
using Shape = std::vector<int64_t>;
using models::LayerKind;

std::string str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string where(const models::LayerSpec& spec) {
  return "layer \"" + spec.name + "\" (" + std::string(models::to_string(spec.kind)) + ")";
}

void expect_inputs(const models::LayerSpec& spec, const std::vector<Shape>& in, size_t n) {
  if (in.size() != n)
    throw InputError(where(spec) + ": expected " + std::to_string(n) + " input(s), got " + std::to_string(in.size()));
}

void expect_shape(const models::LayerSpec& spec, const std::string& what, const Shape& got, const Shape& want) {
  if (got != want) throw InputError(where(spec) + ": " + what + " has shape " + str(got) + ", expected " + str(want));
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
}  // namespace

std::unique_ptr<Layer> make_layer(const models::LayerSpec& spec, const std::vector<Shape>& in) {
  const Shape& out = spec.output_shape;
  auto in0 = [&]() -> const Shape& { return in.at(0); };
  std::unique_ptr<Layer> layer;
  if (!spec.shares.empty())
    throw InputError(where(spec) + ": shares the parameters of layer \"" + spec.shares +
                     "\"; the executor gives every layer its own parameters");
  switch (spec.kind) {
    case LayerKind::input:
      expect_inputs(spec, in, 0);
      if (out.empty()) throw InputError(where(spec) + ": output_shape must not be empty");
      return std::make_unique<InputLayer>(spec);
    case LayerKind::embedding: {
      expect_inputs(spec, in, 1);
      const int64_t seq = spec.attr("seq"), d = spec.attr("d_model");
      expect_shape(spec, "input", in0(), {seq});
      expect_shape(spec, "output_shape", out, {seq, d});
      return std::make_unique<Embedding>(spec, spec.attr("vocab"), seq, d);
    }
    case LayerKind::linear:
    case LayerKind::lm_head: {
      expect_inputs(spec, in, 1);
      const bool head = spec.kind == LayerKind::lm_head;
      const int64_t fin = head ? spec.attr("d_model") : spec.attr("in");
      const int64_t fout = head ? spec.attr("vocab") : spec.attr("out");
      Shape want_in = in0();
      if (want_in.empty() || want_in.back() != fin)
        throw InputError(where(spec) + ": input has shape " + str(in0()) + ", expected last dimension " +
                         std::to_string(fin));
      Shape want_out = in0();
      want_out.back() = fout;
      expect_shape(spec, "output_shape", out, want_out);
      auto l = std::make_unique<Linear>(spec, fin, fout, !head && spec.attr_or("bias", 1) != 0);
      if (head) l->set_init_std(0.02);
      return l;
    }
    case LayerKind::relu:
    case LayerKind::gelu:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, in0());
      return std::make_unique<ActivationLayer>(spec,
                                               spec.kind == LayerKind::relu ? Activation::relu : Activation::gelu);
    case LayerKind::layer_norm:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, in0());
      return std::make_unique<LayerNorm>(spec, in0(), spec.attr("dim"));
    case LayerKind::attention:
    case LayerKind::transformer_block: {
      expect_inputs(spec, in, 1);
      const int64_t seq = spec.attr("seq"), d = spec.attr("d_model"), heads = spec.attr("heads");
      expect_shape(spec, "input", in0(), {seq, d});
      expect_shape(spec, "output_shape", out, {seq, d});
      if (spec.kind == LayerKind::attention) {
        if (spec.attr_or("causal", 1) != 1)
          throw InputError(where(spec) + ": causal = " + std::to_string(spec.attr_or("causal", 1)) +
                           "; the executor runs causal attention only");
        return std::make_unique<Attention>(spec, seq, d, heads);
      }
      return std::make_unique<TransformerBlock>(spec, seq, d, heads, spec.attr("ffn"));
    }
    case LayerKind::residual_add:
      expect_inputs(spec, in, 2);
      expect_shape(spec, "second input", in.at(1), in0());
      expect_shape(spec, "output_shape", out, in0());
      return std::make_unique<ResidualAdd>(spec);
    case LayerKind::softmax_xent:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, {1});
      return std::make_unique<SoftmaxXent>(spec, in0(), spec.attr_or("rows", 1), spec.attr("classes"));
    case LayerKind::mse_loss:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, {1});
      if (spec.attrs.count("dim") && spec.attr("dim") != numel(in0()))
        throw InputError(where(spec) + ": attribute dim " + std::to_string(spec.attr("dim")) +
                         " does not match the input's " + std::to_string(numel(in0())) + " elements");
      return std::make_unique<MseLoss>(spec, in0());
    case LayerKind::conv2d: {
      expect_inputs(spec, in, 1);
      auto l = std::make_unique<Conv2d>(spec, spec.attr("in_c"), spec.attr("out_c"), spec.attr("kernel"),
                                        spec.attr_or("stride", 1), spec.attr_or("pad", 0), spec.attr("in_h"),
                                        spec.attr("in_w"), spec.attr_or("bias", 1) != 0, spec.attr_or("groups", 1));
      expect_shape(spec, "input", in0(), l->input_shapes()[0]);
      expect_shape(spec, "output_shape", out, l->output_sample_shape());
      return l;
    }
    case LayerKind::max_pool: {
      expect_inputs(spec, in, 1);
      auto l = std::make_unique<Pool>(spec, PoolKind::max, spec.attr("c"), spec.attr("kernel"),
                                      spec.attr_or("stride", spec.attr("kernel")), spec.attr_or("pad", 0),
                                      spec.attr("in_h"), spec.attr("in_w"));
      expect_shape(spec, "input", in0(), l->input_shapes()[0]);
      expect_shape(spec, "output_shape", out, l->output_sample_shape());
      return l;
    }
    case LayerKind::flatten:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, {numel(in0())});
      return std::make_unique<Flatten>(spec, in0());
    case LayerKind::avg_pool: {
      expect_inputs(spec, in, 1);
      auto l = std::make_unique<Pool>(spec, PoolKind::avg, spec.attr("c"), spec.attr("kernel"),
                                      spec.attr_or("stride", spec.attr("kernel")), spec.attr_or("pad", 0),
                                      spec.attr("in_h"), spec.attr("in_w"));
      expect_shape(spec, "input", in0(), l->input_shapes()[0]);
      expect_shape(spec, "output_shape", out, l->output_sample_shape());
      return l;
    }
    case LayerKind::batch_norm:
      expect_inputs(spec, in, 1);
      if (in0().empty() || in0()[0] != spec.attr("c"))
        throw InputError(where(spec) + ": input has shape " + str(in0()) + ", expected " +
                         std::to_string(spec.attr("c")) + " channels first");
      expect_shape(spec, "output_shape", out, in0());
      return std::make_unique<BatchNorm>(spec, in0());
    case LayerKind::concat: {
      if (in.empty()) throw InputError(where(spec) + ": expected at least one input");
      auto l = std::make_unique<Concat>(spec, in);
      expect_shape(spec, "output_shape", out, l->output_sample_shape());
      return l;
    }
    case LayerKind::dropout:
      expect_inputs(spec, in, 1);
      expect_shape(spec, "output_shape", out, in0());
      return std::make_unique<Dropout>(spec, in0(), spec.attr("permille"));
    case LayerKind::opaque: break;
  }
  throw InputError(where(spec) +
                   ": this layer kind cannot be executed (an opaque layer is known "
                   "only through its profile)");
}

}  // namespace pw::exec
