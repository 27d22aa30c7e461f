#include "tools/zoo_flags.h"

#include <string>

namespace pw::tools {

namespace {
struct SizeFlag {
  const char* flag;
  int64_t models::ZooOptions::*field;
  const char* help;
};
constexpr SizeFlag kSizeFlags[] = {
    {"--layers", &models::ZooOptions::layers, "gpt: transformer blocks"},
    {"--d-model", &models::ZooOptions::d_model, "gpt: hidden size"},
    {"--heads", &models::ZooOptions::heads, "gpt: attention heads"},
    {"--ffn", &models::ZooOptions::ffn, "gpt: MLP hidden size (0 = 4 * d-model)"},
    {"--seq", &models::ZooOptions::seq, "gpt: sequence length"},
    {"--vocab", &models::ZooOptions::vocab, "gpt: vocabulary size"},
    {"--depth", &models::ZooOptions::depth, "mlp: linear layers"},
    {"--width", &models::ZooOptions::width, "mlp: layer width"},
    {"--image", &models::ZooOptions::image, "conv nets: image side in pixels"},
    {"--width-divisor", &models::ZooOptions::width_divisor, "conv nets: divide every channel count"},
    {"--classes", &models::ZooOptions::classes, "conv nets: output classes"},
    {"--dropout-permille", &models::ZooOptions::dropout_permille, "vgg16: dropout after fc6, fc7 (1/1000)"},
};
constexpr const char* kTiedFlag = "--tied-embeddings";
}  // namespace

models::ZooOptions small_zoo_options() {
  models::ZooOptions z;
  z.layers = 4;
  z.depth = 4;
  z.width = 256;
  z.d_model = 64;
  z.heads = 4;
  z.ffn = 256;
  z.seq = 64;
  z.vocab = 256;
  z.image = 32;
  z.width_divisor = 8;
  z.classes = 10;
  return z;
}

int64_t small_zoo_batch(const std::string& family) { return family == "gpt" ? 16 : family == "mlp" ? 32 : 8; }

void add_zoo_size_options(CLI::App* sub, models::ZooOptions& z, const models::ZooOptions& defaults) {
  for (const SizeFlag& f : kSizeFlags)
    sub->add_option(f.flag, z.*f.field, std::string(f.help) + " (default " + std::to_string(defaults.*f.field) + ")");
  sub->add_flag(kTiedFlag, z.tied_embeddings, "gpt: the LM head reuses the token embedding");
}

models::ZooOptions with_unset_sizes_from(const models::ZooOptions& given, const models::ZooOptions& defaults,
                                         const CLI::App& sub) {
  models::ZooOptions z = given;
  for (const SizeFlag& f : kSizeFlags)
    if (sub.count(f.flag) == 0) z.*f.field = defaults.*f.field;
  if (sub.count(kTiedFlag) == 0) z.tied_embeddings = defaults.tied_embeddings;
  return z;
}

const char* first_size_flag_given(const CLI::App& sub) {
  for (const SizeFlag& f : kSizeFlags)
    if (sub.count(f.flag) > 0) return f.flag;
  return sub.count(kTiedFlag) > 0 ? kTiedFlag : nullptr;
}

}  // namespace pw::tools
