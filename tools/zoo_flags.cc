#include "tools/zoo_flags.h"

#include <string>

#include "models/error.h"

namespace pw::tools {

namespace {
// `families`: the zoo families the flag sizes ("conv": vgg16, resnet50, densenet121).
struct SizeFlag {
  const char* flag;
  int64_t models::ZooOptions::*field;
  const char* help;
  const char* families;
};
constexpr SizeFlag kSizeFlags[] = {
    {"--layers", &models::ZooOptions::layers, "gpt: transformer blocks", "gpt"},
    {"--d-model", &models::ZooOptions::d_model, "gpt: hidden size", "gpt"},
    {"--heads", &models::ZooOptions::heads, "gpt: attention heads", "gpt"},
    {"--ffn", &models::ZooOptions::ffn, "gpt: MLP hidden size (0 = 4 * d-model)", "gpt"},
    {"--seq", &models::ZooOptions::seq, "gpt: sequence length", "gpt"},
    {"--vocab", &models::ZooOptions::vocab, "gpt: vocabulary size", "gpt"},
    {"--depth", &models::ZooOptions::depth, "mlp: linear layers", "mlp"},
    {"--width", &models::ZooOptions::width, "mlp: layer width", "mlp"},
    {"--image", &models::ZooOptions::image, "conv nets: image side in pixels", "conv"},
    {"--width-divisor", &models::ZooOptions::width_divisor, "conv nets: divide every channel count", "conv"},
    {"--classes", &models::ZooOptions::classes, "conv nets: output classes", "conv"},
    {"--dropout-permille", &models::ZooOptions::dropout_permille, "vgg16: dropout after fc6, fc7 (1/1000)", "vgg16"},
};
constexpr const char* kTiedFlag = "--tied-embeddings";  // gpt

bool sizes(const std::string& families, const std::string& family) {
  if (families == "conv") return family == "vgg16" || family == "resnet50" || family == "densenet121";
  return families == family;
}

std::string family_text(const std::string& families) {
  return families == "conv" ? "the conv nets (vgg16, resnet50, densenet121)" : families;
}
}  // namespace

models::ZooOptions small_zoo_options() {
  models::ZooOptions z;
  z.layers = 4;
  z.depth = 4;
  z.width = 256;
  z.d_model = 64;
  z.heads = 4;
  z.ffn = 0;  // 4 * d_model, as the zoo's: --d-model alone scales the MLP with it
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

void check_size_flags_for_family(const std::string& family, const CLI::App& sub) {
  for (const SizeFlag& f : kSizeFlags)
    if (sub.count(f.flag) > 0 && !sizes(f.families, family))
      throw InputError(std::string(f.flag) + ": sizes " + family_text(f.families) + ", not " + family);
  if (sub.count(kTiedFlag) > 0 && family != "gpt")
    throw InputError(std::string(kTiedFlag) + ": sizes gpt, not " + family);
}

}  // namespace pw::tools
