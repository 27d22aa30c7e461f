#include "models/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "models/error.h"
#include "models/error_text.h"

namespace pw {
namespace {

std::string human(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& file, uint64_t limit) {
  const std::string name = escape_for_message(file, 200);
  if (file.empty()) throw InputError("input file: empty file name");
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    throw InputError(name + ": cannot open file for reading (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw InputError(name + ": is a directory");
  if (!S_ISREG(st.st_mode))
    throw InputError(name + ": not a regular file (a device, FIFO or socket cannot be read as input)");
  if (static_cast<uint64_t>(st.st_size) > limit)
    throw InputError(name + ": " + std::to_string(st.st_size) + " bytes, more than the " + human(limit) +
                     " limit of an input file");
  Fd in;
  // O_NONBLOCK: if the path was swapped for a FIFO after stat, open does not wait for a writer.
  in.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (in.fd < 0) throw InputError(name + ": cannot open file for reading (" + std::strerror(errno) + ")");
  struct stat st2 {};
  if (::fstat(in.fd, &st2) != 0 || !S_ISREG(st2.st_mode))
    throw InputError(name + ": not a regular file (a device, FIFO or socket cannot be read as input)");
  std::string text;
  text.reserve(static_cast<size_t>(st2.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(name + ": cannot read file (" + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > limit) throw InputError(name + ": more than the " + human(limit) + " limit of an input file");
  }
  if (text.empty()) throw InputError(name + ": file is empty");
  return text;
}

void check_utf8(std::string_view text, const std::string& name) {
  for (size_t i = 0; i < text.size();) {
    // ASCII runs, eight bytes at a time (no byte with the high bit set).
    uint64_t w;
    while (i + 8 <= text.size() && (std::memcpy(&w, text.data() + i, 8), (w & 0x8080808080808080ull) == 0)) i += 8;
    if (i == text.size()) break;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size() && !(n == 2 && c < 0xC2) && !(n == 4 && c > 0xF4);
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && n == 3) {
      const unsigned char c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && n == 4) {
      const unsigned char c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (!ok) {
      const size_t line =
          1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
      throw InputError(name + ": line " + std::to_string(line) + ": not valid UTF-8 text");
    }
    i += n;
  }
}

}  // namespace pw
