// pins/ store file: load (missing is empty, corrupt is an error naming the path, never a
// reset) and the atomic save (temp file + fsync + rename: a reader sees the old or the new
// file, never a mix; a failed save leaves the old file and no temp file).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gateway/pins/pins.h"

namespace gw::pins {
namespace {

namespace fs = std::filesystem;

// A fresh directory from mkdtemp, removed (with everything in it) at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "gw-pins-test-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    // Undo any chmod a test made so everything can be removed.
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

void writeFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Definition tool(std::string_view name, std::string_view description) {
  Definition def;
  std::string error;
  REQUIRE(hashTool(R"({"name":")" + std::string(name) + R"(","description":")" +
                       std::string(description) + R"("})",
                   def, error));
  return def;
}

Store sample(std::string_view description, size_t tools) {
  Store s;
  for (size_t i = 0; i < tools; ++i) {
    const std::string name = "tool_" + std::to_string(i);
    s.observe("up", name, tool(name, "one"), false, "2026-01-01T00:00:00Z");
    s.observe("up", name, tool(name, description), false, "2026-01-02T00:00:00Z");
  }
  s.observe("other", "n", tool("n", description), true, "2026-01-03T00:00:00Z");
  return s;
}

TEST_CASE("pins file: a missing file is an empty store that did not exist", "[pins]") {
  TempDir dir;
  for (const std::string& path : {dir.file("pins.json"), dir.file("no/such/dir/pins.json")}) {
    INFO(path);
    Store out = sample("x", 1);
    bool existed = true;
    std::string error;
    CHECK(Store::load(path, out, existed, error));
    CHECK_FALSE(existed);
    CHECK(out.upstreams().empty());
    CHECK_FALSE(out.dirty());
  }
}

TEST_CASE("pins file: an unusable file is an error naming the path, out untouched", "[pins]") {
  TempDir dir;
  const std::string path = dir.file("pins.json");
  struct Case {
    std::string name;
    std::string content;
    std::string error;  // after "pins store <path>: "
  };
  const std::vector<Case> cases = {
      {"empty", "", "not valid JSON"},
      {"truncated", R"({"version":1,"upstreams":{"w":)", "not valid JSON"},
      {"not a store", R"({"version":2,"upstreams":{}})", "version: not 1"},
      {"bad entry", R"({"version":1,"upstreams":{"w":{"t":{}}}})",
       R"(upstreams.w.t: neither "pin" nor "pending")"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    writeFile(path, c.content);
    Store out = sample("x", 2);
    out.clearDirty();
    const std::string before = out.serialize();
    bool existed = false;
    std::string error;
    CHECK_FALSE(Store::load(path, out, existed, error));
    CHECK(existed);
    CHECK(error.starts_with("pins store " + path + ": " + c.error));
    CHECK(out.serialize() == before);
    CHECK_FALSE(out.dirty());
  }

  // Not a regular file: a directory, a FIFO (which must not block the load).
  const std::string sub = dir.file("a_dir");
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  const std::string fifo = dir.file("a_fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const std::string& p : {sub, fifo}) {
    INFO(p);
    Store out;
    bool existed = false;
    std::string error;
    CHECK_FALSE(Store::load(p, out, existed, error));
    CHECK(existed);
    CHECK(error == "pins store " + p + ": not a regular file");
  }

  // Larger than 64 MiB (sparse, so cheap).
  const std::string big = dir.file("big.json");
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    CHECK(::ftruncate(fd, (off_t{64} << 20) + 1) == 0);
    ::close(fd);
  }
  Store out;
  bool existed = false;
  std::string error;
  CHECK_FALSE(Store::load(big, out, existed, error));
  CHECK(existed);
  CHECK(error == "pins store " + big + ": larger than 64 MiB");

  // A path through a regular file: exists in a sense, and is not a silent reset.
  CHECK_FALSE(Store::load(path + "/x", out, existed, error));
  CHECK(existed);
  CHECK(error.starts_with("pins store " + path + "/x: "));

  // Unreadable (root reads anything, so only checked as another user).
  if (::geteuid() != 0) {
    writeFile(path, Store{}.serialize());
    REQUIRE(::chmod(path.c_str(), 0) == 0);
    CHECK_FALSE(Store::load(path, out, existed, error));
    CHECK(existed);
    CHECK(error.starts_with("pins store " + path + ": "));
  } else {
    WARN("running as root: the unreadable-file case is skipped");
  }
}

TEST_CASE("pins file: save writes a file load gives back, atomically", "[pins]") {
  TempDir dir;
  const std::string path = dir.file("pins.json");
  const Store a = sample("a", 3);
  std::string error;
  REQUIRE(a.save(path, error));
  CHECK(a.dirty());  // save does not clear it
  CHECK(entries(dir.path()) == std::set<std::string>{"pins.json"});
  CHECK(readFile(path) == a.serialize());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);

  Store back;
  bool existed = false;
  REQUIRE(Store::load(path, back, existed, error));
  CHECK(existed);
  CHECK_FALSE(back.dirty());
  CHECK(back.serialize() == a.serialize());

  // Replacing an existing file.
  const Store b = sample("b", 1);
  REQUIRE(b.save(path, error));
  CHECK(readFile(path) == b.serialize());
  CHECK(entries(dir.path()) == std::set<std::string>{"pins.json"});

  // A relative path (temp file in the current directory).
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  const bool relative_ok = a.save("rel.json", error);
  fs::current_path(cwd);
  CHECK(relative_ok);
  CHECK(readFile(dir.file("rel.json")) == a.serialize());
  CHECK(entries(dir.path()) == std::set<std::string>{"pins.json", "rel.json"});
}

TEST_CASE("pins file: a failed save leaves the old file and no temp file", "[pins]") {
  TempDir dir;
  const Store a = sample("a", 2);
  const Store b = sample("b", 2);
  std::string error;

  // Into a directory that does not exist.
  const std::string missing = dir.file("missing/pins.json");
  CHECK_FALSE(a.save(missing, error));
  CHECK(error.starts_with("pins store " + missing + ": cannot create a temp file in "));
  CHECK(entries(dir.path()).empty());

  // Over a directory: the temp file is written, the rename fails and the temp file goes.
  const std::string over_dir = dir.file("is_a_dir");
  REQUIRE(::mkdir(over_dir.c_str(), 0755) == 0);
  writeFile(over_dir + "/keep", "x");
  CHECK_FALSE(a.save(over_dir, error));
  CHECK(error.starts_with("pins store " + over_dir + ": rename temp file over it: "));
  CHECK(entries(dir.path()) == std::set<std::string>{"is_a_dir"});
  CHECK(entries(over_dir) == std::set<std::string>{"keep"});

  // A name that is not UTF-8 is refused before anything is written.
  Store bad;
  bad.observe("up\xFF", "t", tool("t", "d"), false, "2026-01-01T00:00:00Z");
  const std::string bad_path = dir.file("bad.json");
  CHECK_FALSE(bad.save(bad_path, error));
  CHECK(error.find("not valid UTF-8") != std::string::npos);
  CHECK(entries(dir.path()) == std::set<std::string>{"is_a_dir"});

  // In a read-only directory (root writes anyway, so only checked as another user).
  const std::string ro = dir.file("ro");
  REQUIRE(::mkdir(ro.c_str(), 0755) == 0);
  const std::string path = ro + "/pins.json";
  REQUIRE(a.save(path, error));
  if (::geteuid() != 0) {
    REQUIRE(::chmod(ro.c_str(), 0555) == 0);
    CHECK_FALSE(b.save(path, error));
    CHECK(error.starts_with("pins store " + path + ": "));
    CHECK(readFile(path) == a.serialize());
    CHECK(entries(ro) == std::set<std::string>{"pins.json"});
    REQUIRE(::chmod(ro.c_str(), 0755) == 0);
  } else {
    WARN("running as root: the read-only-directory case is skipped");
  }
  CHECK(readFile(path) == a.serialize());
  CHECK(entries(ro) == std::set<std::string>{"pins.json"});
}

TEST_CASE("pins file: a reader racing saves sees one whole store or the other", "[pins]") {
  TempDir dir;
  const std::string path = dir.file("pins.json");
  // A few hundred KiB each, so a torn (non-atomic) replacement would be caught by a load.
  const Store a = sample("first definition", 300);
  const Store b = sample("second, different definition", 200);
  const std::string text_a = a.serialize();
  const std::string text_b = b.serialize();
  REQUIRE(text_a != text_b);
  std::string error;
  REQUIRE(a.save(path, error));

  constexpr int kRounds = 200;
  std::atomic<int> save_failures{0};
  std::string first_save_error;  // written by the saver only, read after join
  std::thread saver([&] {
    for (int i = 0; i < kRounds; ++i) {
      std::string e;
      if (!(i % 2 == 0 ? b : a).save(path, e)) {
        if (save_failures.fetch_add(1) == 0) {
          first_save_error = e;
        }
      }
    }
  });
  int loads_ok = 0;
  int saw_a = 0;
  int saw_b = 0;
  std::string first_load_error;
  for (int i = 0; i < kRounds; ++i) {
    Store got;
    bool existed = false;
    std::string e;
    if (!Store::load(path, got, existed, e) || !existed) {
      if (first_load_error.empty()) {
        first_load_error = e.empty() ? "missing" : e;
      }
      continue;
    }
    ++loads_ok;
    const std::string text = got.serialize();
    saw_a += text == text_a ? 1 : 0;
    saw_b += text == text_b ? 1 : 0;
  }
  saver.join();
  INFO(first_save_error);
  INFO(first_load_error);
  CHECK(save_failures.load() == 0);
  CHECK(loads_ok == kRounds);
  CHECK(saw_a + saw_b == kRounds);
  CHECK(entries(dir.path()) == std::set<std::string>{"pins.json"});
  Store last;
  bool existed = false;
  REQUIRE(Store::load(path, last, existed, error));
  CHECK(last.serialize() == text_a);  // the last save (i = 199) wrote a
}

}  // namespace
}  // namespace gw::pins
