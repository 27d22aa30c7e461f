#include "exec/data/cifar.h"

#include <algorithm>

#include "exec/data/npy.h"
#include "exec/data/read_only_file.h"
#include "models/error.h"

namespace pw::exec {

namespace {

constexpr int64_t kPixels = kCifarRecordBytes - 1;
constexpr int64_t kScanRecords = 256;  // records read at once by the label check

class CifarSamples final : public SampleReader {
 public:
  CifarSamples(const std::vector<std::string>& files, int64_t classes) {
    for (const std::string& f : files) {
      auto file = std::make_unique<ReadOnlyFile>(f);
      if (file->size() == 0 || file->size() % kCifarRecordBytes != 0)
        throw InputError(f + ": " + std::to_string(file->size()) +
                         " bytes is not a whole number of CIFAR-10 records (" + std::to_string(kCifarRecordBytes) +
                         " bytes each: 1 label byte, 3072 pixel bytes)" +
                         (file->size() > kCifarRecordBytes ? "; truncated?" : ""));
      check_labels(*file, classes);
      total_ += static_cast<int64_t>(file->size()) / kCifarRecordBytes;
      first_.push_back(total_);  // one past the file's last sample
      files_.push_back(std::move(file));
    }
  }
  int64_t samples() const override { return total_; }
  void read(int64_t i, float* input, float* target) const override {
    const size_t f = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), i) - first_.begin());
    const int64_t r = i - (f == 0 ? 0 : first_[f - 1]);
    unsigned char rec[kCifarRecordBytes];
    files_[f]->read_at(static_cast<uint64_t>(r * kCifarRecordBytes), kCifarRecordBytes, rec);
    target[0] = static_cast<float>(rec[0]);
    for (int64_t p = 0; p < kPixels; ++p) input[p] = static_cast<float>(rec[1 + p]) / 255.0f;
  }
  std::string describe() const override {
    std::string s = "CIFAR-10 binary " + std::to_string(total_) + " images (";
    for (size_t f = 0; f < files_.size(); ++f) s += (f ? ", " : "") + files_[f]->name();
    return s + ")";
  }

 private:
  static void check_labels(const ReadOnlyFile& file, int64_t classes) {
    const int64_t n = static_cast<int64_t>(file.size()) / kCifarRecordBytes;
    std::vector<unsigned char> chunk(static_cast<size_t>(kScanRecords * kCifarRecordBytes));
    for (int64_t first = 0; first < n; first += kScanRecords) {
      const int64_t count = std::min(kScanRecords, n - first);
      file.read_at(static_cast<uint64_t>(first * kCifarRecordBytes), static_cast<uint64_t>(count * kCifarRecordBytes),
                   chunk.data());
      for (int64_t r = 0; r < count; ++r)
        if (const int label = chunk[static_cast<size_t>(r * kCifarRecordBytes)]; label >= classes)
          throw InputError(file.name() + ": label " + std::to_string(label) + " of record " +
                           std::to_string(first + r) + " is out of range: the model has " + std::to_string(classes) +
                           " classes [0, " + std::to_string(classes) + ")");
    }
  }

  std::vector<std::unique_ptr<ReadOnlyFile>> files_;
  std::vector<int64_t> first_;
  int64_t total_ = 0;
};

}  // namespace

std::unique_ptr<SampleReader> open_cifar_samples(const std::vector<std::string>& files, const SampleSpec& spec) {
  const std::vector<int64_t> image{3, 32, 32};
  if (spec.input_shape != image)
    throw InputError(files.front() + ": CIFAR-10 images are [N, 3, 32, 32]; model \"" + spec.model + "\"'s input is " +
                     shape_text(spec.input_shape).insert(1, "N, "));
  if (spec.classes < 1)
    throw InputError(files.front() + ": CIFAR-10 labels are class ids; model \"" + spec.model +
                     "\" has no softmax_xent loss");
  return std::make_unique<CifarSamples>(files, spec.classes);
}

}  // namespace pw::exec
