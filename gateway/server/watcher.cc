// inotify-based file watching (see watcher.h).

#include "gateway/server/watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gw::server {

namespace {

constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF;

}  // namespace

FileWatcher::FileWatcher(event_base* base,
                         std::function<void(const std::set<std::string>&)> on_change,
                         std::chrono::milliseconds debounce)
    : base_(base), on_change_(std::move(on_change)), debounce_(debounce) {
  timer_ = event::makeTimer<FileWatcher, &FileWatcher::onTimer>(base_, this);
}

FileWatcher::~FileWatcher() {
  read_.reset();
  timer_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool FileWatcher::watch(const std::vector<std::string>& files, std::string& error) {
  if (fd_ < 0) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) {
      error = std::string("inotify: ") + std::strerror(errno);
      return false;
    }
    read_.reset(event_new(base_, fd_, EV_READ | EV_PERSIST, &FileWatcher::onReadable, this));
    event_add(read_.get(), nullptr);
  }
  for (const auto& [wd, names] : names_) {
    inotify_rm_watch(fd_, wd);
  }
  names_.clear();
  bool ok = true;
  for (const std::string& f : files) {
    std::filesystem::path p(f);
    std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    int wd = inotify_add_watch(fd_, dir.c_str(), kMask);
    if (wd < 0) {
      error = "cannot watch " + dir + ": " + std::strerror(errno);
      ok = false;
      continue;
    }
    names_[wd].insert(p.filename().string());  // the same directory gives the same wd
  }
  return ok;
}

void FileWatcher::onReadable(evutil_socket_t fd, short, void* arg) {
  auto* self = static_cast<FileWatcher*>(arg);
  alignas(inotify_event) char buf[4096];
  bool relevant = false;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      auto it = self->names_.find(ev->wd);
      if (it == self->names_.end()) {
        continue;
      }
      std::string_view name = ev->len > 0 ? std::string_view(ev->name) : std::string_view{};
      // Our files by name, or a ConfigMap's "..data" symlink swap.
      if (name.empty() || name.starts_with("..")) {
        relevant = true;
        self->changed_.insert(std::string());
      } else if (it->second.contains(std::string(name))) {
        relevant = true;
        self->changed_.insert(std::string(name));
      }
    }
  }
  if (relevant) {
    timeval tv = event::toTimeval(self->debounce_);
    evtimer_add(self->timer_.get(), &tv);  // re-adding pushes the deadline back
  }
}

void FileWatcher::onTimer() {
  std::set<std::string> changed;
  changed.swap(changed_);
  on_change_(changed);
}

}  // namespace gw::server
