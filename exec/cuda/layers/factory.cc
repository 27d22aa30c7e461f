#include "exec/cuda/layers/cnn_layers.h"
#include "exec/cuda/layers/layers.h"
#include "models/error.h"

namespace pw::exec::cuda {

using models::LayerKind;

bool has_cuda_layer(LayerKind kind) {
  switch (kind) {
    case LayerKind::input:
    case LayerKind::embedding:
    case LayerKind::linear:
    case LayerKind::lm_head:
    case LayerKind::relu:
    case LayerKind::gelu:
    case LayerKind::layer_norm:
    case LayerKind::residual_add:
    case LayerKind::softmax_xent:
    case LayerKind::mse_loss:
    case LayerKind::flatten:
    case LayerKind::dropout:
    case LayerKind::attention:
    case LayerKind::transformer_block:
    case LayerKind::conv2d:
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
    case LayerKind::batch_norm:
    case LayerKind::concat: return true;
    default: return false;
  }
}

std::unique_ptr<Layer> make_cuda_layer(const models::LayerSpec& spec, const std::vector<std::vector<int64_t>>& in,
                                       CudaDevice& dev) {
  if (!has_cuda_layer(spec.kind))
    throw InputError("layer \"" + spec.name + "\" (" + std::string(models::to_string(spec.kind)) +
                     "): the CUDA backend does not run this layer kind yet");
  std::unique_ptr<Layer> twin = make_layer(spec, in);  // validates attributes and shapes
  using Pass = CudaPassThrough::Kind;
  switch (spec.kind) {
    case LayerKind::input: return std::make_unique<CudaPassThrough>(std::move(twin), dev, Pass::input);
    case LayerKind::residual_add: return std::make_unique<CudaPassThrough>(std::move(twin), dev, Pass::residual_add);
    case LayerKind::flatten: return std::make_unique<CudaPassThrough>(std::move(twin), dev, Pass::flatten);
    case LayerKind::embedding:
      return std::make_unique<CudaEmbedding>(std::move(twin), dev, spec.attr("vocab"), spec.attr("seq"),
                                             spec.attr("d_model"));
    case LayerKind::linear:
    case LayerKind::lm_head: {
      const bool head = spec.kind == LayerKind::lm_head;
      const int64_t fin = head ? spec.attr("d_model") : spec.attr("in");
      const int64_t fout = head ? spec.attr("vocab") : spec.attr("out");
      return std::make_unique<CudaLinear>(std::move(twin), dev, fin, fout, !head && spec.attr_or("bias", 1) != 0);
    }
    case LayerKind::relu:
    case LayerKind::gelu: return std::make_unique<CudaActivation>(std::move(twin), dev, spec.kind == LayerKind::gelu);
    case LayerKind::layer_norm: return std::make_unique<CudaLayerNorm>(std::move(twin), dev, spec.attr("dim"));
    case LayerKind::dropout: return std::make_unique<CudaDropout>(std::move(twin), dev, spec.attr("permille"));
    case LayerKind::softmax_xent:
      return std::make_unique<CudaLoss>(std::move(twin), dev, true, spec.attr_or("rows", 1), spec.attr("classes"));
    case LayerKind::mse_loss: return std::make_unique<CudaLoss>(std::move(twin), dev, false, 0, 0);
    case LayerKind::attention:
      return std::make_unique<CudaAttention>(std::move(twin), dev, spec.attr("seq"), spec.attr("d_model"),
                                             spec.attr("heads"));
    case LayerKind::transformer_block:
      return std::make_unique<CudaTransformerBlock>(std::move(twin), dev, spec.attr("seq"), spec.attr("d_model"),
                                                    spec.attr("heads"), spec.attr("ffn"));
    case LayerKind::conv2d: {
      ConvGeometry g;
      g.in_c = spec.attr("in_c");
      g.out_c = spec.attr("out_c");
      g.kernel = spec.attr("kernel");
      g.stride = spec.attr_or("stride", 1);
      g.pad = spec.attr_or("pad", 0);
      g.in_h = spec.attr("in_h");
      g.in_w = spec.attr("in_w");
      g.groups = spec.attr_or("groups", 1);
      return std::make_unique<CudaConv2d>(std::move(twin), dev, g, spec.attr_or("bias", 1) != 0);
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool: {
      Window2d w;
      w.channels = spec.attr("c");
      w.kernel = spec.attr("kernel");
      w.stride = spec.attr_or("stride", w.kernel);
      w.pad = spec.attr_or("pad", 0);
      w.in_h = spec.attr("in_h");
      w.in_w = spec.attr("in_w");
      return std::make_unique<CudaPool>(std::move(twin), dev, spec.kind == LayerKind::max_pool, w);
    }
    case LayerKind::batch_norm: {
      int64_t spatial = 1;
      for (size_t i = 1; i < in.at(0).size(); ++i) spatial *= in[0][i];
      return std::make_unique<CudaBatchNorm>(std::move(twin), dev, in[0][0], spatial);
    }
    case LayerKind::concat: return std::make_unique<CudaConcat>(std::move(twin), dev, in);
    default: break;
  }
  PW_CHECK(false, "has_cuda_layer and make_cuda_layer disagree");
  return nullptr;
}

}  // namespace pw::exec::cuda
