#include "exec/data/read_only_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "models/error.h"

namespace pw::exec {

ReadOnlyFile::ReadOnlyFile(std::string file) : file_(std::move(file)) {
  const std::string where = file_ + ": ";
  fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(where + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InputError(where + "not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadOnlyFile::read_at(uint64_t offset, uint64_t n, void* out) const {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw InputError(file_ + ": read failed at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    if (got == 0)
      throw InputError(file_ + ": truncated: the file ends at byte " + std::to_string(offset) +
                       " (it shrank while reading)");
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

}  // namespace pw::exec
