// pins/: reading the store file, replacing it atomically and the writers' advisory lock (see
// pins.h). Plain POSIX calls; every failure becomes an error text naming the path.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <string>
#include <system_error>

#include "gateway/core/utf8.h"
#include "gateway/pins/pins.h"

namespace gw::pins {

namespace {

constexpr off_t kMaxStoreBytes = off_t{64} << 20;

std::string errnoText(int err) {
  return std::generic_category().message(err);
}

// "pins store <path>: <what>: <strerror(err)>" (`err` captured by the caller right after the
// failing call, before anything else can touch errno).
std::string failure(const std::string& path, std::string_view what, int err) {
  std::string out = "pins store " + path + ": ";
  out += what;
  if (err != 0) {
    out += what.empty() ? "" : ": ";
    out += errnoText(err);
  }
  return out;
}

class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const noexcept { return fd_; }
  // Gives the descriptor up (the caller closes it).
  int take() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now; the close(2) result (0 or -1 with errno).
  int reset() noexcept {
    const int rc = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

bool writeAll(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    if (n == 0) {
      errno = EIO;  // no progress on a regular file: do not spin
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

bool readStoreFile(const std::string& path, std::string& text, bool& existed, std::string& error) {
  existed = false;
  // O_NONBLOCK: a FIFO at `path` must not hang the caller (it is refused below); it has no
  // effect on a regular file.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) {
      text.clear();
      return true;
    }
    existed = true;  // something is there (or may be) that we cannot read: never a reset
    error = failure(path, "", err);
    return false;
  }
  existed = true;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    error = failure(path, "", errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "pins store " + path + ": not a regular file";
    return false;
  }
  if (st.st_size > kMaxStoreBytes) {
    error = "pins store " + path + ": larger than 64 MiB";
    return false;
  }
  text.clear();
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) {
        continue;
      }
      error = failure(path, "", err);
      return false;
    }
    if (n == 0) {
      break;
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > static_cast<size_t>(kMaxStoreBytes)) {
      error = "pins store " + path + ": larger than 64 MiB";
      return false;
    }
  }
  return true;
}

bool Store::load(const std::string& path, Store& out, bool& existed, std::string& error) {
  std::string text;
  if (!readStoreFile(path, text, existed, error)) {
    return false;
  }
  if (!existed) {
    out = Store{};
    return true;
  }
  Store parsed;
  std::string detail;
  if (!parse(text, parsed, detail)) {
    // "pins store: <where>: <what>" → "pins store <path>: <where>: <what>"
    constexpr std::string_view kPrefix = "pins store: ";
    std::string_view rest = detail;
    if (rest.starts_with(kPrefix)) {
      rest.remove_prefix(kPrefix.size());
    }
    error = "pins store " + path + ": " + std::string(rest);
    return false;
  }
  out = std::move(parsed);
  return true;
}

bool Store::save(const std::string& path, std::string& error) const {
  const std::string text = serialize();
  if (!core::isValidUtf8(text)) {
    error = "pins store " + path + ": an upstream or tool name is not valid UTF-8";
    return false;
  }
  const size_t slash = path.rfind('/');
  const std::string dir_prefix = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string tmp = dir_prefix + "." + path.substr(dir_prefix.size()) + ".tmp-XXXXXX";

  Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    error = failure(path, "cannot create a temp file in " + dir, err);
    return false;
  }
  const auto fail = [&](std::string_view step) {
    const int err = errno;
    fd.reset();
    ::unlink(tmp.c_str());
    error = failure(path, step, err);
    return false;
  };
  if (::fchmod(fd.get(), 0644) != 0) {
    return fail("chmod temp file");
  }
  if (!writeAll(fd.get(), text)) {
    return fail("write temp file");
  }
  if (::fsync(fd.get()) != 0) {
    return fail("fsync temp file");
  }
  if (fd.reset() != 0) {
    return fail("close temp file");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail("rename temp file over it");
  }
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0 || ::fsync(dir_fd.get()) != 0) {
    const int err = errno;
    error = failure(path, "saved, but fsync of " + dir + " failed", err);
    return false;
  }
  return true;
}

FileLock::~FileLock() {
  release();
}

void FileLock::release() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock
    fd_ = -1;
  }
}

bool FileLock::acquire(const std::string& store_path, std::chrono::milliseconds wait,
                       std::string& error) {
  release();
  const std::string path = store_path + ".lock";
  // Opened read-only: closing it is no IN_CLOSE_WRITE for a watcher of the directory.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) {
    const int err = errno;
    error = "pins store lock " + path + ": " + errnoText(err);
    return false;
  }
  constexpr long kPollNs = 5'000'000;
  const long polls = std::max<long>(1, static_cast<long>(wait.count()) * 1'000'000 / kPollNs);
  for (long i = 0; i <= polls; ++i) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      fd_ = fd.take();
      return true;
    }
    const int err = errno;
    if (err != EWOULDBLOCK && err != EINTR) {
      error = "pins store lock " + path + ": " + errnoText(err);
      return false;
    }
    if (i < polls) {
      const timespec pause{0, kPollNs};
      ::nanosleep(&pause, nullptr);
    }
  }
  error = "pins store lock " + path + ": held by another writer for more than " +
          std::to_string(wait.count()) + " ms";
  return false;
}

}  // namespace gw::pins
