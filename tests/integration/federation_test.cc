// Federation (issue #15): one gateway route in front of three real v2-SDK servers
// (tests/fixtures/fed-server.mjs) — "weather", "files" and "search" — driven by the real v2 SDK
// client (tests/fixtures/fed-client.mjs) and by raw HTTP. Merged lists in `names: keep` and
// `names: prefix`, calls routed to the owner, the merged server/discover, a server slower than
// `federation.list_timeout`, a server that is gone, the merged subscriptions/listen stream and
// `mcp-gateway check` on bad federated routes. Everything on 127.0.0.1, ports chosen at run time.

#include <algorithm>
#include <catch.hpp>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

void requireFixtures() {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
}

size_t countOf(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// ---- the servers ------------------------------------------------------------------------

struct FedSpec {
  std::string name;
  std::string tools;
  std::string prompts;
  std::string resources;
  std::string templates;
  int list_delay_ms = 0;
  std::string cache;  // FED_CACHE: "public:<ms>" / "private:<ms>"; "" = the SDK's default
};

// One fed-server.mjs on an ephemeral port. The constructor only starts it (so several start
// at once); port() waits for its `LISTENING <port>` line.
class FedServer {
 public:
  FedServer(const TempDir& dir, const FedSpec& s)
      : name_(s.name),
        process_({"node", kFixtures + "/fed-server.mjs", "0"}, dir.path(), "fed-" + s.name,
                 {"FED_NAME=" + s.name, "FED_TOOLS=" + s.tools, "FED_PROMPTS=" + s.prompts,
                  "FED_RESOURCES=" + s.resources, "FED_TEMPLATES=" + s.templates,
                  "FED_LIST_DELAY_MS=" + std::to_string(s.list_delay_ms), "FED_CACHE=" + s.cache}) {
  }

  uint16_t port() {
    if (port_ != 0) {
      return port_;
    }
    auto deadline = Clock::now() + Ms(10000);
    while (Clock::now() < deadline) {
      std::string out = process_.stdoutText();
      size_t pos = out.find("LISTENING ");
      if (pos != std::string::npos && out.find('\n', pos) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
        return port_;
      }
      if (!process_.running()) {
        break;
      }
      std::this_thread::sleep_for(Ms(20));
    }
    throw std::runtime_error("fed-server " + name_ + " did not print LISTENING; stderr:\n" +
                             process_.stderrText());
  }
  const std::string& name() const { return name_; }
  std::string log() const { return process_.stderrText(); }
  // subscriptions/listen exchanges this server holds open right now (from its stderr).
  long openListens() const {
    std::string e = log();
    return static_cast<long>(countOf(e, "LISTEN_OPEN ")) -
           static_cast<long>(countOf(e, "LISTEN_CLOSED "));
  }
  void stop() { process_.terminate(); }

 private:
  std::string name_;
  Process process_;
  uint16_t port_ = 0;
};

// ---- the gateway ------------------------------------------------------------------------

struct FedOptions {
  std::string names = "keep";
  std::string list_timeout = "5s";
  int search_list_delay_ms = 0;
  std::string cache;  // every server's FED_CACHE
};

constexpr char kFederationYaml[] = R"(listen: "127.0.0.1:${PORT}"
admin: "127.0.0.1:${ADMIN}"
upstreams:
  - name: weather
    endpoints: ["127.0.0.1:${A}"]
  - name: files
    endpoints: ["127.0.0.1:${B}"]
  - name: search
    endpoints: ["127.0.0.1:${C}"]
routes:
  - name: default
    upstreams: [weather, files, search]
    names: ${NAMES}
federation:
  separator: "__"
  list_timeout: ${LIST_TIMEOUT}
  max_items: 10000
access_log: { path: "${ACCESS_LOG}" }
)";

// The three servers of the brief behind one gateway route.
struct Federation {
  explicit Federation(const FedOptions& o = {})
      : weather(dir, {"weather", "forecast,alerts,shared_tool", "weather_prompt", "weather://today",
                      "weather://city/{name}", 0, o.cache}),
        files(dir, {"files", "read_file,shared_tool", "files_prompt", "file:///etc/motd", "", 0,
                    o.cache}),
        search(dir, {"search", "query,slow", "", "", "", o.search_list_delay_ms, o.cache}),
        gw(kFederationYaml, {{"ADMIN", "0"},
                             {"A", std::to_string(weather.port())},
                             {"B", std::to_string(files.port())},
                             {"C", std::to_string(search.port())},
                             {"NAMES", o.names},
                             {"LIST_TIMEOUT", o.list_timeout}}),
        admin(gw.adminPort()) {}

  std::string url() const { return "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp"; }
  std::string logs() {
    return "gateway stderr:\n" + gw.process().stderrText() + "\nweather stderr:\n" + weather.log() +
           "\nfiles stderr:\n" + files.log() + "\nsearch stderr:\n" + search.log();
  }
  std::string metrics() const {
    return fetch(admin, "GET /metrics HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").body;
  }

  TempDir dir;
  FedServer weather;
  FedServer files;
  FedServer search;
  Gateway gw;
  uint16_t admin;  // the port the gateway chose
};

// ---- the client fixture -----------------------------------------------------------------

struct Ran {
  int rc = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  // The first stdout line (the answer of call/prompt/read), without the newline.
  std::string line() const { return out.substr(0, out.find('\n')); }
};

std::vector<std::string> clientArgv(const std::string& url, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"node", kFixtures + "/fed-client.mjs", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string nextClientName() {
  static int n = 0;
  return "fed-client-" + std::to_string(++n);
}

// Runs fed-client.mjs to completion (≤ timeout).
Ran fedClient(const TempDir& dir, const std::string& url, const std::vector<std::string>& args,
              Ms timeout = Ms(20000)) {
  Process p(clientArgv(url, args), dir.path(), nextClientName());
  auto rc = p.wait(timeout);
  if (!rc) {
    p.terminate();
  }
  return {rc.value_or(-1), p.stdoutText(), p.stderrText()};
}

// The strings of the JSON array `"key":[…]` (first occurrence) in a text of the lists
// scenario; names and URIs there carry no escapes.
std::vector<std::string> stringArray(const std::string& json, std::string_view key) {
  std::vector<std::string> out;
  std::string opener = "\"" + std::string(key) + "\":[";
  size_t pos = json.find(opener);
  if (pos == std::string::npos) {
    return out;
  }
  pos += opener.size();
  while (pos < json.size() && json[pos] != ']') {
    if (json[pos] == '"') {
      size_t end = json.find('"', pos + 1);
      if (end == std::string::npos) {
        break;
      }
      out.push_back(json.substr(pos + 1, end - pos - 1));
      pos = end + 1;
    } else if (json[pos] == ',' || json[pos] == ' ') {
      ++pos;
    } else {
      break;  // not an array of strings
    }
  }
  return out;
}

size_t countIn(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), s));
}

// What the lists scenario printed, parsed.
struct Lists {
  std::string json;
  std::vector<std::string> tools, prompts, resources, templates;
};

Lists lists(Federation& f) {
  Ran r = fedClient(f.dir, f.url(), {"lists"});
  INFO("fed-client lists stderr: " << r.err << "\n" << f.logs());
  REQUIRE(r.rc == 0);
  Lists l;
  l.json = r.line();
  l.tools = stringArray(l.json, "tools");
  l.prompts = stringArray(l.json, "prompts");
  l.resources = stringArray(l.json, "resources");
  l.templates = stringArray(l.json, "templates");
  return l;
}

// The one-line answer of `call`, `prompt` or `read` (REQUIREs that the client ran).
std::string answer(Federation& f, const std::vector<std::string>& args) {
  Ran r = fedClient(f.dir, f.url(), args);
  INFO("fed-client " << args[0] << " " << args[1] << " stderr: " << r.err << "\n" << f.logs());
  REQUIRE(r.rc == 0);
  return r.line();
}

std::string call(Federation& f, const std::string& tool, const std::string& args_json = "{}") {
  return answer(f, {"call", tool, args_json});
}

// ---- raw HTTP -----------------------------------------------------------------------------

constexpr char kMeta[] = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                         R"("io.modelcontextprotocol/clientInfo":{"name":"itest","version":"1"},)"
                         R"("io.modelcontextprotocol/clientCapabilities":{}})";

// A 2026-07-28 POST /mcp of `method` (Mcp-Name when `name` is not empty) whose params are
// `members` (may be empty) plus the _meta envelope.
std::string rawRequest(std::string_view method, std::string_view name, int id,
                       std::string_view members = "") {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" +
                     std::string(method) + R"(","params":{)" + std::string(members) +
                     (members.empty() ? "" : ",") + kMeta + "}}";
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: " +
      std::string(method) + "\r\n";
  if (!name.empty()) {
    r += "Mcp-Name: " + std::string(name) + "\r\n";
  }
  r += "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

Response toolsList(const Federation& f, Ms timeout = Ms(8000)) {
  return fetch(f.gw.port(), rawRequest("tools/list", "", 11), timeout);
}

// ---- metrics ------------------------------------------------------------------------------

// The sample lines (no # comments) of an exposition text that contain every needle.
std::vector<std::string> sampleLines(const std::string& text,
                                     const std::vector<std::string>& needles) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    if (std::all_of(needles.begin(), needles.end(),
                    [&](const std::string& n) { return has(line, n); })) {
      out.push_back(line);
    }
  }
  return out;
}

// The value of a sample line (the number after the last space).
double valueOf(const std::string& line) {
  size_t sp = line.rfind(' ');
  return sp == std::string::npos ? -1 : std::stod(line.substr(sp + 1));
}

// Sum of the samples whose line starts with `prefix` (a metric name, possibly without its
// suffix or labels).
double sumOf(const std::string& text, const std::string& prefix) {
  double sum = 0;
  for (const std::string& l : sampleLines(text, {prefix})) {
    if (l.rfind(prefix, 0) == 0) {
      sum += valueOf(l);
    }
  }
  return sum;
}

// ---- `mcp-gateway check` ------------------------------------------------------------------

Ran check(const std::string& yaml) {
  TempDir dir;
  std::string file = dir.file("gateway.yaml");
  REQUIRE(writeFile(file, yaml));
  Process p({GW_BINARY, "check", "-c", file}, dir.path(), "check");
  auto rc = p.wait(Ms(10000));
  if (!rc) {
    p.terminate();
  }
  return {rc.value_or(-1), p.stdoutText(), p.stderrText()};
}

constexpr char kCheckUpstreams[] =
    "listen: 127.0.0.1:8080\n"
    "upstreams:\n"
    "  - name: weather\n"
    "    endpoints: [127.0.0.1:9001]\n"
    "  - name: files\n"
    "    endpoints: [127.0.0.1:9002]\n"
    "federation:\n"
    "  separator: \"__\"\n"
    "  list_timeout: 5s\n"
    "  max_items: 10000\n"
    "routes:\n";

}  // namespace

// ---- names: keep --------------------------------------------------------------------------

TEST_CASE("federation: names keep lists every server's items once and routes each to its owner",
          "[federation][slow]") {
  requireFixtures();
  Federation f;

  Lists l = lists(f);
  INFO("lists: " << l.json << "\n" << f.logs());
  for (const char* t : {"forecast", "alerts", "shared_tool", "weather_add_tool", "read_file",
                        "files_add_tool", "query", "slow", "search_add_tool"}) {
    CHECK(countIn(l.tools, t) == 1);
  }
  CHECK(l.tools.size() == 9);
  for (const char* p : {"weather_prompt", "files_prompt"}) {
    CHECK(countIn(l.prompts, p) == 1);
  }
  for (const char* r : {"weather://today", "file:///etc/motd"}) {
    CHECK(countIn(l.resources, r) == 1);
  }
  CHECK(countIn(l.templates, "weather://city/{name}") == 1);

  // Each call reaches the server that listed the tool; the server's answer names it. forecast
  // declares x-mcp-header Region, so the client mirrors Mcp-Param-Region and weather checks it.
  CHECK(call(f, "forecast", R"({"region":"eu-west1"})") ==
        R"(weather:forecast:{"region":"eu-west1"})");
  CHECK(has(f.weather.log(), "REQ tools/call forecast eu-west1"));
  CHECK(call(f, "alerts") == "weather:alerts:{}");
  CHECK(call(f, "read_file", R"({"path":"/etc/motd"})") ==
        R"(files:read_file:{"path":"/etc/motd"})");
  CHECK(call(f, "query", R"({"q":"mcp"})") == R"(search:query:{"q":"mcp"})");
  CHECK(call(f, "slow") == "search:slow:{}");
  // shared_tool is listed by weather and files: weather comes first in `upstreams`.
  CHECK(call(f, "shared_tool") == "weather:shared_tool:{}");
  CHECK_FALSE(has(f.files.log(), "REQ tools/call shared_tool"));

  CHECK(answer(f, {"prompt", "weather_prompt"}) == "weather:weather_prompt");
  CHECK(answer(f, {"prompt", "files_prompt"}) == "files:files_prompt");
  CHECK(answer(f, {"read", "weather://today"}) == "weather:weather://today");
  CHECK(answer(f, {"read", "file:///etc/motd"}) == "files:file:///etc/motd");
  // No server lists weather://city/paris; weather's template weather://city/{name} matches it.
  CHECK(answer(f, {"read", "weather://city/paris"}) == "weather:template:weather://city/paris");

  std::string unknown_tool = call(f, "no_such_tool");
  CHECK(unknown_tool.rfind("ERROR -32602 ", 0) == 0);
  CHECK(has(unknown_tool, "no_such_tool"));

  // Resource not found: the brief says -32002; the 2026-07-28 spec retired -32002 for it in
  // favour of -32602 (SEP-2164), which is what the v2 SDK servers answer. Either is accepted.
  std::string unknown_resource = answer(f, {"read", "nowhere://thing"});
  bool code_ok = unknown_resource.rfind("ERROR -32002 ", 0) == 0 ||
                 unknown_resource.rfind("ERROR -32602 ", 0) == 0;
  CHECK(code_ok);
  if (unknown_resource.rfind("ERROR -32002 ", 0) == 0) {
    WARN("unknown resource answered -32002, retired by 2026-07-28 (SEP-2164: -32602)");
  }

  std::string m = f.metrics();
  INFO("metrics:\n" << m);
  CHECK(sumOf(m, "mcp_gateway_federation_conflicts") >= 1);
}

// ---- names: prefix ------------------------------------------------------------------------

TEST_CASE("federation: names prefix lists upstream__name and calls reach the name the server knows",
          "[federation][slow]") {
  requireFixtures();
  Federation f({"prefix", "5s", 0});

  Lists l = lists(f);
  INFO("lists: " << l.json << "\n" << f.logs());
  for (const char* t :
       {"weather__forecast", "weather__alerts", "weather__shared_tool", "weather__weather_add_tool",
        "files__read_file", "files__shared_tool", "files__files_add_tool", "search__query",
        "search__slow", "search__search_add_tool"}) {
    CHECK(countIn(l.tools, t) == 1);
  }
  CHECK(l.tools.size() == 10);
  CHECK(countIn(l.tools, "forecast") == 0);
  CHECK(countIn(l.tools, "shared_tool") == 0);
  CHECK(countIn(l.prompts, "weather__weather_prompt") == 1);
  CHECK(countIn(l.prompts, "files__files_prompt") == 1);
  CHECK(l.prompts.size() == 2);
  // Resources and templates keep their URIs.
  CHECK(countIn(l.resources, "weather://today") == 1);
  CHECK(countIn(l.resources, "file:///etc/motd") == 1);
  CHECK(countIn(l.templates, "weather://city/{name}") == 1);

  // The server sees its own name in the body and in Mcp-Name (the SDK rejects a mismatch with
  // -32020), and the mirrored Mcp-Param-Region.
  CHECK(call(f, "weather__forecast", R"({"region":"eu-west1"})") ==
        R"(weather:forecast:{"region":"eu-west1"})");
  CHECK(has(f.weather.log(), "REQ tools/call forecast eu-west1"));
  CHECK(call(f, "files__shared_tool") == "files:shared_tool:{}");
  CHECK(call(f, "weather__shared_tool") == "weather:shared_tool:{}");
  CHECK(call(f, "search__query", R"({"q":"x"})") == R"(search:query:{"q":"x"})");
  CHECK(answer(f, {"prompt", "files__files_prompt"}) == "files:files_prompt");
  CHECK(answer(f, {"prompt", "weather__weather_prompt"}) == "weather:weather_prompt");
  CHECK(answer(f, {"read", "file:///etc/motd"}) == "files:file:///etc/motd");
  CHECK(answer(f, {"read", "weather://city/paris"}) == "weather:template:weather://city/paris");

  // The bare name is not a tool of the federated endpoint.
  std::string bare = call(f, "forecast");
  CHECK(bare.rfind("ERROR -32602 ", 0) == 0);
  CHECK_FALSE(has(f.weather.log(), "REQ tools/call forecast -"));
}

// ---- server/discover ----------------------------------------------------------------------

TEST_CASE("federation: server/discover is merged and identifies the gateway",
          "[federation][slow]") {
  requireFixtures();
  Federation f;

  // The client connected with the merged discover result.
  Lists l = lists(f);
  std::string discover = l.json.substr(0, l.json.find(R"(,"serverInfo":)"));
  discover = discover.substr(std::min(discover.size(), discover.find(R"("discover":)")));
  INFO("lists: " << l.json << "\n" << f.logs());
  CHECK(countOf(discover, "2026-07-28") >= 1);
  CHECK(has(discover, R"("tools":{"listChanged":true)"));
  std::string server_name =
      jsonToken(l.json.substr(l.json.find(R"("serverInfo":)")), "name").value_or("<absent>");
  CHECK(server_name != "<absent>");
  CHECK(server_name != "null");
  for (const char* upstream : {"\"weather\"", "\"files\"", "\"search\""}) {
    CHECK(server_name != upstream);
  }

  // The same by a raw POST.
  Response r = fetch(f.gw.port(), rawRequest("server/discover", "", 3));
  INFO("discover answer: " << r.head << r.body);
  CHECK(r.status == 200);
  CHECK(has(r.body, R"("supportedVersions":[)"));
  CHECK(has(r.body, "\"2026-07-28\""));
  CHECK(has(r.body, R"("listChanged":true)"));
  CHECK(has(r.body, "io.modelcontextprotocol/serverInfo"));
  for (const char* upstream : {"weather", "files", "search"}) {
    CHECK_FALSE(has(r.body, std::string(R"("name":")") + upstream + "\""));
  }
}

// ---- a slow server ------------------------------------------------------------------------

TEST_CASE("federation: a server slower than list_timeout is left out and named in log and metrics",
          "[federation][slow]") {
  requireFixtures();
  Federation f({"keep", "1s", 3000});

  auto t0 = Clock::now();
  Response r = toolsList(f);
  long long ms = msBetween(t0, Clock::now());
  INFO("tools/list after " << ms << " ms: " << r.head << r.body << "\n" << f.logs());
  CHECK(r.status == 200);
  CHECK(ms < 2500);  // list_timeout 1 s, search answers after 3 s
  CHECK(has(r.body, "\"forecast\""));
  CHECK(has(r.body, "\"read_file\""));
  CHECK_FALSE(has(r.body, "\"query\""));

  // The access-log line of that tools/list names the upstream that missed.
  std::vector<std::string> hits;
  waitFor(
      [&] {
        hits.clear();
        for (const std::string& line : fileLines(f.gw.accessLogPath())) {
          if (has(line, R"("mcp_method":"tools/list")") && has(line, "search")) {
            hits.push_back(line);
          }
        }
        return !hits.empty();
      },
      Ms(3000));
  INFO("access log:\n" << readFile(f.gw.accessLogPath()));
  CHECK_FALSE(hits.empty());

  // A federation list-miss counter labelled with the upstream (its exact name is the
  // gateway's: any sample line with "federation" and upstream="search" will do).
  std::string m;
  bool counted = waitFor(
      [&] {
        m = f.metrics();
        for (const std::string& line : sampleLines(m, {"federation", "upstream=\"search\""})) {
          if (valueOf(line) >= 1) {
            return true;
          }
        }
        return false;
      },
      Ms(3000));
  INFO("metrics:\n" << m);
  CHECK(counted);
}

// ---- a server that is gone ----------------------------------------------------------------

TEST_CASE("federation: with one server stopped the lists still answer and its tools get 502",
          "[federation][slow]") {
  requireFixtures();
  Federation f;
  Response before = toolsList(f);
  REQUIRE(before.status == 200);
  REQUIRE(has(before.body, "\"read_file\""));

  f.files.stop();
  REQUIRE_FALSE(canConnect(f.files.port()));

  Response r = toolsList(f);
  INFO("tools/list with files stopped: " << r.head << r.body << "\n" << f.logs());
  CHECK(r.status == 200);
  CHECK(has(r.body, "\"forecast\""));
  CHECK(has(r.body, "\"query\""));

  Response c = fetch(f.gw.port(), rawRequest("tools/call", "read_file", 7,
                                             R"("name":"read_file","arguments":{})"));
  INFO("tools/call read_file: " << c.head << c.body);
  CHECK(c.status == 502);
  CHECK(has(c.header("Content-Type").value_or(""), "application/json"));
  CHECK(has(c.body, R"("jsonrpc":"2.0")"));
  CHECK(has(c.body, R"("error":)"));
  CHECK(jsonToken(c.body, "id").value_or("") == "7");

  // The others still answer calls.
  CHECK(call(f, "alerts") == "weather:alerts:{}");
  CHECK(call(f, "query") == "search:query:{}");
}

// ---- subscriptions/listen -----------------------------------------------------------------

TEST_CASE(
    "federation: subscriptions/listen is merged, list_changed of one server reaches the client "
    "and makes the gateway refetch, and closing it closes the upstream streams",
    "[federation][slow]") {
  requireFixtures();
  // Every server's lists are public for 10 minutes: the merged tools/list is served from the
  // gateway's cache, so only the list_changed notification can make the gateway fetch again.
  FedOptions o;
  o.cache = "public:600000";
  Federation f(o);
  std::vector<FedServer*> servers{&f.weather, &f.files, &f.search};
  Response first = toolsList(f);
  REQUIRE(first.status == 200);
  INFO("first tools/list: " << first.body);
  CHECK(has(first.body, R"("cacheScope":"public")"));
  // tools/list requests files has had (the control call below is routed, not listed).
  auto filesLists = [&] { return countOf(f.files.log(), "REQ tools/list "); };
  const size_t lists_cached = filesLists();
  REQUIRE(lists_cached >= 1);
  REQUIRE(toolsList(f).status == 200);
  CHECK(filesLists() == lists_cached);  // served from the cache
  // The gateway opens no listen stream of its own (a list_changed reaches it only on a
  // client's): every server has none open until the client's listen.
  std::map<std::string, long> baseline;
  for (FedServer* s : servers) {
    baseline[s->name()] = s->openListens();
    CHECK(baseline[s->name()] == 0);
  }

  Process listener(clientArgv(f.url(), {"listen", "30000"}), f.dir.path(), "fed-listener");
  bool acked = listener.waitForOutput("notifications/subscriptions/acknowledged", Ms(10000));
  INFO("listener stdout:\n"
       << listener.stdoutText() << "\nlistener stderr:\n"
       << listener.stderrText() << "\n"
       << f.logs());
  REQUIRE(acked);
  // The client's one listen opened one on every upstream.
  for (FedServer* s : servers) {
    INFO("server " << s->name());
    CHECK(waitFor([&] { return s->openListens() > baseline[s->name()]; }, Ms(5000)));
  }

  // files (not the first upstream) adds a tool and announces it on its listen streams.
  CHECK(call(f, "files_add_tool", R"({"name":"fresh_tool"})") == "files:added:fresh_tool");
  CHECK(listener.waitForOutput("notifications/tools/list_changed", Ms(5000), true, false));

  // The gateway's tools/list shows it (bounded: ≤ 50 polls, ≤ 5 s) and routes it to files:
  // the notification made the cached list stale and the gateway fetched it again.
  std::string body;
  auto deadline = Clock::now() + Ms(5000);
  bool listed = false;
  for (int i = 0; i < 50 && Clock::now() < deadline && !listed; ++i) {
    body = toolsList(f, Ms(3000)).body;
    listed = has(body, "\"fresh_tool\"");
    if (!listed) {
      std::this_thread::sleep_for(Ms(100));
    }
  }
  INFO("last tools/list: " << body);
  CHECK(listed);
  CHECK(filesLists() > lists_cached);
  CHECK(call(f, "fresh_tool", R"({"n":1})") == R"(files:fresh_tool:{"n":1})");

  // End the subscription (the SDK aborts the stream and sends notifications/cancelled).
  int rc = listener.terminate();
  std::string out = listener.stdoutText();
  INFO("listener stdout after close:\n" << out);
  CHECK(rc == 0);
  CHECK(countOf(out, "notifications/subscriptions/acknowledged") == 1);
  CHECK(countOf(out, R"("done":true)") == 1);
  // Every notification carries the client's subscription id (the SDK's `listen:0`).
  CHECK(countOf(out, "io.modelcontextprotocol/subscriptionId\":\"listen:0\"") ==
        countOf(out, "\"method\":\"notifications/"));

  for (FedServer* s : servers) {
    INFO("server " << s->name());
    CHECK(waitFor([&] { return s->openListens() == baseline[s->name()]; }, Ms(5000)));
  }
}

TEST_CASE(
    "federation: when the cached list expires under load one request refreshes it and the "
    "others get the expired answer meanwhile",
    "[federation][slow]") {
  requireFixtures();
  // Public for 1 s; search answers its lists 400 ms late, so a refresh is under way that long.
  FedOptions o;
  o.cache = "public:1000";
  o.search_list_delay_ms = 400;
  Federation f(o);
  auto searchLists = [&] { return countOf(f.search.log(), "REQ tools/list "); };
  Response first = toolsList(f);
  REQUIRE(first.status == 200);
  REQUIRE(has(first.body, R"("ttlMs":1000)"));
  const size_t fetched = searchLists();
  REQUIRE(fetched >= 1);
  std::this_thread::sleep_for(Ms(1200));  // stays: the cached answer's ttl running out

  // Ten clients at once: one refreshes (waits for search), nine get the expired list at once.
  constexpr int kClients = 10;
  std::vector<Response> answers(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] { answers[i] = toolsList(f, Ms(8000)); });
  }
  for (auto& t : threads) {
    t.join();
  }
  INFO(f.logs());
  int expired = 0;
  for (const Response& r : answers) {
    CHECK(r.status == 200);
    CHECK(has(r.body, "\"query\""));  // every answer is the whole merged list
    CHECK(has(r.body, "\"forecast\""));
    expired += has(r.body, R"("ttlMs":0,)") ? 1 : 0;
  }
  CHECK(expired >= 1);
  CHECK(expired < kClients);  // the refresher's own answer is fresh
  CHECK(searchLists() == fetched + 1);
  // Once recorded, the refreshed list is served fresh without another fetch.
  Response after = toolsList(f);
  CHECK(after.status == 200);
  CHECK_FALSE(has(after.body, R"("ttlMs":0,)"));
  CHECK(searchLists() == fetched + 1);
}

// ---- client notifications -----------------------------------------------------------------

TEST_CASE("federation: a client notification POST gets 202", "[federation]") {
  requireFixtures();
  Federation f;
  std::string body =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x-1",)" +
      std::string(kMeta) + "}}";
  std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Connection: close\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  Response r = fetch(f.gw.port(), req);
  INFO("response: " << r.head << r.body << "\n" << f.logs());
  CHECK(r.status == 202);
  CHECK(r.body.empty());
}

// ---- mcp-gateway check --------------------------------------------------------------------

TEST_CASE("federation: check accepts a federated route and rejects malformed ones",
          "[federation]") {
  Ran ok = check(std::string(kCheckUpstreams) +
                 "  - name: default\n"
                 "    upstreams: [weather, files]\n"
                 "    names: prefix\n");
  INFO("valid config: rc " << ok.rc << "\n" << ok.out << ok.err);
  REQUIRE(ok.rc == 0);

  struct Case {
    const char* what;
    std::string routes;
    std::vector<std::string> mentions;  // all must appear in the error output
  };
  std::vector<Case> cases{
      {"both upstream and upstreams",
       "  - name: default\n"
       "    upstream: weather\n"
       "    upstreams: [weather, files]\n",
       {"upstream", "upstreams", "default"}},
      {"neither upstream nor upstreams",
       "  - name: default\n"
       "    names: keep\n",
       {"upstream", "default"}},
      {"an unknown upstream in upstreams",
       "  - name: default\n"
       "    upstreams: [weather, nowhere]\n",
       {"nowhere"}},
      {"names: other",
       "  - name: default\n"
       "    upstreams: [weather, files]\n"
       "    names: other\n",
       {"names", "other"}},
      {"a legacy route with upstreams",
       "  - name: old\n"
       "    legacy: true\n"
       "    upstreams: [weather, files]\n"
       "  - name: default\n"
       "    upstream: weather\n",
       {"legacy", "old"}},
  };
  for (const Case& c : cases) {
    Ran r = check(std::string(kCheckUpstreams) + c.routes);
    INFO(c.what << ": rc " << r.rc << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.rc != 0);
    CHECK(r.rc != -1);  // it finished
    for (const std::string& m : c.mentions) {
      CHECK(has(r.out + r.err, m));
    }
  }
}
