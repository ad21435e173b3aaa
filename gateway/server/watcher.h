#pragma once
// Config file watching for hot reload: inotify on the directories of the config and policy
// files, so an in-place write, an editor's write-and-rename and a Kubernetes ConfigMap update
// (an atomic swap of the `..data` symlink) are all seen. Events are coalesced: the callback
// runs once, `debounce` after the last relevant event. Runs on the main thread's event_base.

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gateway/event/owners.h"

namespace gw::server {

class FileWatcher {
 public:
  // `on_change` gets the file names (not paths) that changed since its last call; an
  // unnamed event or a ConfigMap swap gives "" among them (anything may have changed).
  FileWatcher(event_base* base, std::function<void(const std::set<std::string>&)> on_change,
              std::chrono::milliseconds debounce);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Replaces the watched set with these files (absolute paths). False with `error` set when
  // inotify is unavailable or a directory cannot be watched (the rest are still watched).
  bool watch(const std::vector<std::string>& files, std::string& error);

 private:
  static void onReadable(evutil_socket_t fd, short, void* arg);
  void onTimer();

  event_base* base_;
  std::function<void(const std::set<std::string>&)> on_change_;
  std::set<std::string> changed_;  // since the last callback
  std::chrono::milliseconds debounce_;
  int fd_ = -1;
  event::EventPtr read_;
  event::EventPtr timer_;
  std::map<int, std::set<std::string>> names_;  // watch descriptor → file names in that dir
};

}  // namespace gw::server
