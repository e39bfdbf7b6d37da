// The host services table, exercised by a real plugin (fixtures/plugins/service_probe) through
// the C++ helper, against a real HTTP server on 127.0.0.1.
#include "sqlite/sqlite_memory.hpp"
#include "agent/fake_memory.hpp"
#include "support/loopback_server.hpp"
#include "plugins/abi_text.hpp"
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "sqlite/database.hpp"
#include "sqlite/sqlite_plugin_kv.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <thread>

using namespace agenthost;
using nlohmann::json;

namespace {

// A loopback HTTP server on an ephemeral port, stopped when the test ends.
struct TestServer {
    int port = 0;
    TestServer() {
        loopback.http.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("hello world", "text/plain");
            res.set_header("X-Test", "yes");
        });
        loopback.http.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
            res.set_content(req.get_header_value("X-Token") + ":" + req.body, "text/plain");
        });
        loopback.http.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
            res.status = 404;
            res.set_content("not here", "text/plain");
        });
        loopback.http.Get("/stream", [](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/plain", [](size_t offset, httplib::DataSink& sink) {
                if (offset >= 5 * 6) {
                    sink.done();
                    return true;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                return sink.write("chunk\n", 6);
            });
        });
        loopback.http.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return sink.write(".", 1);  // never ends by itself
            });
        });
        port = loopback.start();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
    test::LoopbackServer loopback;  // last: it stops before the members its handlers use go
};

}  // namespace

TEST_CASE("host services: key-value store is per plugin and survives a restart", "[integration][services]") {
    test::TempDir dir;
    {
        auto app = test::start(test::config(dir.path, true));
        CHECK(test::call_tool(*app, "probe_kv", {{"op", "set"}, {"key", "token"}, {"value", "abc"}})["content"] == AH_OK);
        CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "token"}})["content"] == "abc");
        CHECK(test::call_tool(*app, "probe_kv", {{"op", "set"}, {"key", "gone"}, {"value", "x"}})["content"] == AH_OK);
        CHECK(test::call_tool(*app, "probe_kv", {{"op", "delete"}, {"key", "gone"}})["content"] == AH_OK);
        CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "gone"}})["error_code"] == "not_found");
    }
    auto app = test::start(test::config(dir.path, true));
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "token"}})["content"] == "abc");

    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    sqlite::SqlitePluginKv kv(**db);
    CHECK(kv.get("service_probe", "token").value() == "abc");
    CHECK_FALSE(kv.get("example_c", "token").value().has_value());
    // A store that cannot be read never answers "not found": the key may have a value (a provider
    // taking it for absent started its cassette over during a database restart).
    REQUIRE((*db)->exec("ALTER TABLE plugin_kv RENAME TO plugin_kv_away"));
    CHECK_FALSE(kv.get("service_probe", "token"));
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "token"}})["error_code"] == "io");
    REQUIRE((*db)->exec("ALTER TABLE plugin_kv_away RENAME TO plugin_kv"));
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "token"}})["content"] == "abc");
}

TEST_CASE("host services: session memory, long-term memory and events", "[integration][services]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));
    json results = json::array({{{"index", 1}, {"title", "A"}}});
    CHECK(test::call_tool(*app, "probe_memory", {{"key", "search_results"}, {"value", results}}, "conv-a")["content"] == AH_OK);
    CHECK(test::call_tool(*app, "probe_memory", {{"key", "search_results"}}, "conv-a")["content"] == results);
    CHECK(test::call_tool(*app, "probe_memory", {{"key", "search_results"}}, "conv-b")["error_code"] == "not_found");
    // Long-term memory: the empty conversation, visible from any conversation.
    CHECK(test::call_tool(*app, "probe_memory", {{"conversation", ""}, {"key", "folders"}, {"value", {{"movies", "/m"}}}},
                          "conv-a")["content"] == AH_OK);
    CHECK(test::call_tool(*app, "probe_memory", {{"conversation", ""}, {"key", "folders"}}, "conv-b")["content"]["movies"] ==
          "/m");

    CHECK(test::call_tool(*app, "probe_event", {{"message", "download finished"}, {"level", "info"}}, "conv-a")["content"] ==
          AH_OK);
    CHECK(test::call_tool(*app, "probe_event", {{"no_message", true}}, "conv-a")["content"] == AH_ERR_INVALID_ARGUMENT);
    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    sqlite::SqliteMemory memory(**db);
    auto events = memory.take_events("conv-a");
    REQUIRE(events.size() == 1);
    CHECK(events[0].plugin == "service_probe");
    CHECK(json::parse(events[0].body)["message"] == "download finished");
    CHECK(memory.take_events("conv-a").empty());  // shown once
}

TEST_CASE("host services: own config table and data directory", "[integration][services]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, true);
    cfg.plugin_tables["service_probe"] = R"({"answer": 42})";
    cfg.plugin_tables["example_c"] = R"({"secret": "not for the probe"})";
    auto app = test::start(cfg);
    json config = test::call_tool(*app, "probe_config", json::object())["content"];
    CHECK(config["answer"] == 42);                // agenthost.toml overrides the manifest default
    CHECK(config["nested"]["colour"] == "blue");  // defaults not overridden stay
    CHECK_FALSE(config.contains("secret"));
    std::string data_dir = test::call_tool(*app, "probe_data_dir", json::object())["content"];
    CHECK(data_dir == (dir.path / "plugins" / "service_probe").string());
    CHECK(test::read_file(dir.path / "plugins" / "service_probe" / "probe.txt") == "written by service_probe");
}

TEST_CASE("host services: memory_get tells a store that cannot be read from an absent entry", "[integration][services]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    sqlite::SqlitePluginKv kv(**db);
    test::FakeMemory memory;
    plugins::HostServices services(kv, memory);
    ah_host* host = services.new_handle("reader", "{}", dir.path);
    std::string got;
    ah_writer out{sizeof(ah_writer), &got, [](void* ctx, const char* data, size_t len) -> ah_status {
                      static_cast<std::string*>(ctx)->append(data, len);
                      return AH_OK;
                  }};
    auto get = [&](std::string_view key) { return services.api()->memory_get(host, {"c", 1}, {key.data(), key.size()}, &out); };
    REQUIRE(memory.set("c", "topic", R"("films")"));
    CHECK(get("topic") == AH_OK);
    CHECK(got == R"("films")");
    CHECK(get("missing") == AH_ERR_NOT_FOUND);
    memory.fail_reads(true);
    CHECK(get("topic") == AH_ERR_IO);  // the entry may exist: a plugin must not write over it
    CHECK(get("missing") == AH_ERR_IO);
}

namespace {

// The plugins' key-value store on SQLite, counting the reads that reach it.
class CountingKv final : public store::PluginKv {
public:
    explicit CountingKv(sqlite::Database& db) : inner_(db) {}
    Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) override {
        ++reads;
        return inner_.get(plugin, key);
    }
    Status set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) override {
        return inner_.set(plugin, key, value, flush);
    }
    Status erase(std::string_view plugin, std::string_view key) override { return inner_.erase(plugin, key); }
    int reads = 0;

private:
    sqlite::SqlitePluginKv inner_;
};

}  // namespace

TEST_CASE("host services: a run's provider reads its own key-value writes back without the store, and no write it missed",
          "[integration][services]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    CountingKv kv(**db);
    test::FakeMemory memory;
    plugins::HostServices services(kv, memory);
    ah_host* provider = services.new_handle("prov", "{}", dir.path);
    provider->kv_flush = store::Flush::with_next_write;                            // as the registry sets it for a provider
    ah_host* same_plugin_elsewhere = services.new_handle("prov", "{}", dir.path);  // e.g. its own thread's writes
    const ah_host_api* api = services.api();
    auto set = [&](ah_host* h, std::string_view key, std::string_view value) {
        return api->kv_set(h, {key.data(), key.size()}, {value.data(), value.size()});
    };
    auto get = [&](ah_host* h, std::string_view key) -> std::optional<std::string> {
        std::string got;
        ah_writer out{sizeof(ah_writer), &got, [](void* ctx, const char* data, size_t len) -> ah_status {
                          static_cast<std::string*>(ctx)->append(data, len);
                          return AH_OK;
                      }};
        ah_status status = api->kv_get(h, {key.data(), key.size()}, &out);
        if (status == AH_ERR_NOT_FOUND) return std::nullopt;
        REQUIRE(status == AH_OK);
        return got;
    };
    plugins::RunKv run(services.run_kv());

    SECTION("outside a run every read asks the store") {
        REQUIRE(set(provider, "progress/c1", "1") == AH_OK);
        CHECK(get(provider, "progress/c1") == "1");
        CHECK(kv.reads == 1);
    }
    SECTION("within the run its own writes are read back from its copy") {
        plugins::RunKv::Bound bound(&run);
        CHECK_FALSE(get(provider, "progress/c1"));  // nothing written yet: the store says
        REQUIRE(set(provider, "progress/c1", "1") == AH_OK);
        CHECK(get(provider, "progress/c1") == "1");
        REQUIRE(set(provider, "progress/c1", "2") == AH_OK);
        CHECK(get(provider, "progress/c1") == "2");
        CHECK(kv.reads == 1);
        CHECK(services.run_kv().reads().from_run == 2);
        CHECK(services.run_kv().reads().from_store == 1);
        // What it keeps is what the store has: the held write joins the next write of the database.
        auto stored = kv.get("prov", "progress/c1");
        REQUIRE(stored);
        CHECK(*stored == "2");
    }
    SECTION("another run's write of the same key is never missed") {
        {
            plugins::RunKv::Bound bound(&run);
            REQUIRE(set(provider, "token", "mine") == AH_OK);
        }
        {
            plugins::RunKv other(services.run_kv());
            plugins::RunKv::Bound bound(&other);
            REQUIRE(set(provider, "token", "theirs") == AH_OK);
        }
        plugins::RunKv::Bound bound(&run);
        CHECK(get(provider, "token") == "theirs");
        CHECK(kv.reads == 1);
    }
    SECTION("a write or delete outside any run is never missed") {
        plugins::RunKv::Bound bound(&run);
        REQUIRE(set(provider, "token", "mine") == AH_OK);
        ah_status from_thread = AH_ERR_INTERNAL;
        std::thread([&] { from_thread = set(same_plugin_elsewhere, "token", "from a thread"); }).join();
        REQUIRE(from_thread == AH_OK);
        CHECK(get(provider, "token") == "from a thread");
        REQUIRE(set(provider, "token", "mine again") == AH_OK);
        REQUIRE(api->kv_delete(same_plugin_elsewhere, {"token", 5}) == AH_OK);
        CHECK_FALSE(get(provider, "token"));
        CHECK(kv.reads == 2);
    }
    SECTION("a model call made for no run inside a run's binding reads the store") {
        plugins::RunKv::Bound bound(&run);
        REQUIRE(set(provider, "k", "v") == AH_OK);
        {
            plugins::RunKv::Bound none(nullptr);
            CHECK(get(provider, "k") == "v");
            CHECK(kv.reads == 1);
        }
        CHECK(get(provider, "k") == "v");
        CHECK(kv.reads == 1);
    }
    SECTION("a copy holds a few MiB at most: past that, the store answers") {
        plugins::RunKv::Bound bound(&run);
        const std::string big(plugins::RunKv::kMaxKeptBytes, 'x');
        REQUIRE(set(provider, "big", big) == AH_OK);
        REQUIRE(set(provider, "small", "s") == AH_OK);
        CHECK(get(provider, "big") == big);
        CHECK(get(provider, "small") == "s");
        CHECK(kv.reads == 1);
    }
    SECTION("a tool plugin's write, stored at once, is not kept: the store answers") {
        plugins::RunKv::Bound bound(&run);
        ah_host* tool = services.new_handle("tool", "{}", dir.path);
        REQUIRE(set(tool, "tracked", "[]") == AH_OK);
        CHECK(get(tool, "tracked") == "[]");
        CHECK(kv.reads == 1);
    }
}

TEST_CASE("host services: a plugin thread that outlives destroy() is refused, not crashed into", "[integration][services]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, true);
    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    sqlite::SqlitePluginKv kv(**db);
    sqlite::SqliteMemory memory(**db);
    auto services = std::make_unique<plugins::HostServices>(kv, memory);  // outlives the registry, as in the host
    std::filesystem::path report = dir.path / "plugins" / "service_probe" / "linger.txt";
    {
        plugins::Registry registry(cfg, *services);
        registry.load_all();
        plugins::CallInput call;
        call.tool_name = "probe_linger";
        call.conversation_id = "c1";
        auto lingering = registry.call_tool(call);
        REQUIRE(lingering);
        REQUIRE(json::parse(*lingering)["content"] == "lingering");
        for (int i = 0; i < 500 && !kv.get("service_probe", "linger").value(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(kv.get("service_probe", "linger").value() == "still here");  // served while the plugin lives
        CHECK_FALSE(std::filesystem::exists(report));
    }  // destroy() runs here; the plugin's thread keeps going
    for (int i = 0; i < 500 && !std::filesystem::exists(report); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(std::filesystem::exists(report));
    CHECK(test::read_file(report) == std::to_string(AH_ERR_UNSUPPORTED));
    CHECK(kv.erase("service_probe", "linger").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(kv.get("service_probe", "linger").value().has_value());  // nothing written after the refusal
    // The host shuts down while the thread still calls: its handle and the services table stay
    // valid and refuse in silence (an outside try saw a std::bad_alloc log error here; under
    // AddressSanitizer this was a use after free).
    services.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(services == nullptr);
}

TEST_CASE("host services: a plugin that logs in a loop is kept to its budget and the dropped lines are counted",
          "[integration][services]") {
    // An outside try: a plugin logging in a loop printed 579,910 lines in 3 s.
    using Clock = plugins::LogBudget::Clock;
    plugins::LogBudget budget;
    const Clock::time_point t0 = Clock::now();
    int allowed = 0;
    for (int i = 0; i < 5000; ++i) allowed += budget.take(t0).allowed ? 1 : 0;
    CHECK(allowed == static_cast<int>(plugins::LogBudget::kBurst));
    // Half a second later, half a second's lines pass; the first says how many were dropped.
    auto next = budget.take(t0 + std::chrono::milliseconds(500));
    CHECK(next.allowed);
    CHECK(next.dropped_before == 5000 - plugins::LogBudget::kBurst);
    int later = 1;
    for (int i = 0; i < 1000; ++i) later += budget.take(t0 + std::chrono::milliseconds(500)).allowed ? 1 : 0;
    CHECK(later == static_cast<int>(plugins::LogBudget::kPerSecond / 2));
    CHECK(budget.take(t0 + std::chrono::seconds(60)).dropped_before ==
          static_cast<uint64_t>(1000 - later + 1));  // refilled, and said
    // Said at most once a second: a plugin logging on at the budget's rate does not get a note
    // with every line (an outside try saw one, doubling the lines), and what is left is said when
    // it stops.
    const Clock::time_point t1 = t0 + std::chrono::seconds(60);
    while (budget.take(t1).allowed) {
    }
    CHECK(budget.take(t1 + std::chrono::milliseconds(100)).dropped_before == 0);  // within the second
    for (int i = 0; i < 50; ++i) (void)budget.take(t1 + std::chrono::milliseconds(100));
    CHECK(budget.take_dropped() > 0);
    CHECK(budget.take_dropped() == 0);

    // Through the host's log service: the lines over the budget are not written.
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "agenthost.db");
    REQUIRE(db.ok());
    sqlite::SqlitePluginKv kv(**db);
    sqlite::SqliteMemory memory(**db);
    plugins::HostServices services(kv, memory);
    ah_host* host = services.new_handle("chatty", "{}", dir.path);
    std::ostringstream written;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(written);
    auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    const std::string line = "again";
    for (int i = 0; i < 3000; ++i) services.api()->log(host, AH_LOG_WARN, {line.data(), line.size()}, {nullptr, 0});
    spdlog::set_default_logger(previous);
    const std::string out = written.str();
    const auto lines = std::count(out.begin(), out.end(), '\n');
    CHECK(lines >= plugins::LogBudget::kBurst);
    CHECK(lines < plugins::LogBudget::kBurst + 100);  // 3,000 asked; the rest within the time it took
}

TEST_CASE("host services: a plugin's text reaches the log with every control character escaped", "[integration][services]") {
    // C0, DEL, C1 in UTF-8 (U+009B is CSI to some terminals), raw bytes that are not UTF-8 (a raw
    // 0x9B is CSI to an 8-bit terminal), overlong forms and surrogates: escaped. Text stays.
    CHECK(plugins::printable("ok \x1b[31m red\x07\x7f") == "ok \\x1b[31m red\\x07\\x7f");
    CHECK(plugins::printable("a \xc2\x9b"
                             "1m b \xc2\x85") == "a \\xc2\\x9b1m b \\xc2\\x85");
    CHECK(plugins::printable("raw \x9b \xff \xc0\xaf \xed\xa0\x80 \xe2\x82") ==
          "raw \\x9b \\xff \\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82");
    CHECK(plugins::printable("ünï 中文 \xf0\x9f\x98\x80 \xc2\xa0") == "ünï 中文 \xf0\x9f\x98\x80 \xc2\xa0");
}

TEST_CASE("host services: HTTP through the host, streamed", "[integration][services][http]") {
    test::TempDir dir;
    TestServer server;
    auto app = test::start(test::config(dir.path, true));

    json hello = test::call_tool(*app, "probe_http", {{"url", server.url("/hello")}})["content"];
    CHECK(hello["status"] == AH_OK);
    CHECK(hello["code"] == 200);
    CHECK(hello["body"] == "hello world");
    CHECK(hello["headers"]["x-test"] == "yes");

    json echo = test::call_tool(
        *app, "probe_http",
        {{"url", server.url("/echo")}, {"method", "POST"}, {"body", "payload"}, {"headers", {{"X-Token", "t1"}}}})["content"];
    CHECK(echo["body"] == "t1:payload");

    json missing = test::call_tool(*app, "probe_http", {{"url", server.url("/missing")}})["content"];
    CHECK(missing["status"] == AH_OK);  // the transport worked; the status tells the rest
    CHECK(missing["code"] == 404);

    json stream = test::call_tool(*app, "probe_http", {{"url", server.url("/stream")}})["content"];
    CHECK(stream["body"] == "chunk\nchunk\nchunk\nchunk\nchunk\n");
    CHECK(stream["chunks"].get<int>() >= 2);  // delivered as it arrived, not in one piece

    CHECK(test::call_tool(*app, "probe_http", {{"url", "file:///etc/passwd"}})["content"]["status"] == AH_ERR_INVALID_ARGUMENT);
    CHECK(test::call_tool(*app, "probe_http",
                          {{"url", server.url("/hello")}, {"headers", {{"X-A", "1\r\nX-Injected: 1"}}}})["content"]["status"] ==
          AH_ERR_INVALID_ARGUMENT);
    CHECK(test::call_tool(*app, "probe_http", {{"url", "http://127.0.0.1:1/"}})["content"]["status"] == AH_ERR_IO);
    CHECK(test::call_tool(*app, "probe_http", {{"url", server.url("/slow")}, {"timeout_ms", 300}})["content"]["status"] ==
          AH_ERR_TIMEOUT);
}

TEST_CASE("host services: cancellation reaches a running call and its HTTP transfer", "[integration][services][cancel]") {
    test::TempDir dir;
    TestServer server;
    auto app = test::start(test::config(dir.path, true));

    ah_cancel cancel;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.cancel();
    });
    json slow = test::call_tool(*app, "probe_http", {{"url", server.url("/slow")}}, "c1", &cancel)["content"];
    canceller.join();
    CHECK(slow["status"] == AH_ERR_CANCELLED);

    ah_cancel cancel_wait;
    std::thread canceller2([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancel_wait.cancel();
    });
    CHECK(test::call_tool(*app, "probe_wait", {{"ms", 20000}}, "c1", &cancel_wait)["content"] == "cancelled");
    canceller2.join();
}
