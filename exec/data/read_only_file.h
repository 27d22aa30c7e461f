// A file opened for reading by offset (pread), for data sources that read samples as the
// mini-batches need them instead of loading the file. Owns the descriptor; not copyable.
// read_at may be called from any thread (pread has no shared file position). Errors are
// InputError naming the file.
#pragma once

#include <cstdint>
#include <string>

namespace pw::exec {

class ReadOnlyFile {
 public:
  // Throws InputError("<file>: <why>") unless `file` is a regular file that can be opened for
  // reading.
  explicit ReadOnlyFile(std::string file);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& name() const { return file_; }
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset` into `out`; InputError("<file>: truncated ...") when the
  // file ends first (it shrank after it was opened).
  void read_at(uint64_t offset, uint64_t n, void* out) const;

 private:
  std::string file_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace pw::exec
