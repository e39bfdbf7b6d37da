// Health, readiness, metrics, the plugin report and the plugins' resources.
#include "app/reports.hpp"
#include "mcp/mcp_server.hpp"
#include "server/replies.hpp"
#include "server/routes/routes.hpp"

#include "common/cancel.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace agenthost::server {
using nlohmann::json;

namespace {

// A prober asks often and waits little: a model server that has not listed its models within this
// is not ready, said so, rather than holding the probe for the provider's whole timeout.
constexpr auto kReadyzProviderDeadline = std::chrono::milliseconds(3000);
// The fallback chain, asked when the default is not ready, shares this much more between its providers.
constexpr auto kReadyzFallbackDeadline = std::chrono::milliseconds(2000);

llm::Readiness readiness_within(app::HostApp& app, const std::string& provider, std::chrono::milliseconds deadline) {
    ah_cancel cancel;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::thread timer([&] {
        std::unique_lock lock(mutex);
        if (!finished.wait_for(lock, deadline, [&] { return done; })) cancel.cancel();
    });
    auto readiness = app.queue().check(provider, &cancel);
    {
        std::lock_guard lock(mutex);
        done = true;
    }
    finished.notify_all();
    timer.join();
    if (cancel.cancelled() && !readiness.ready) {
        readiness.problem = llm::NotReady::model_list_failed;
        const auto ms = deadline.count();
        const std::string within = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
        readiness.message = "provider '" + provider + "' did not list its models within " + within +
                            ": its server is down, stalled or busy (agenthost doctor waits longer)";
    }
    return readiness;
}

void readyz(ServerState& state, Response& res) {
    app::HostApp& app = state.app;
    json checks = json::object();
    bool ok = app.storage().ready();
    checks["database"] = ok ? "ok" : "unavailable";
    auto disk = app::data_dir_problem(app.config().data_dir);
    checks["data_dir"] = disk ? "unwritable" : "ok";
    const std::string provider = app.config().provider.name;
    auto readiness = readiness_within(app, provider, kReadyzProviderDeadline);
    checks["provider"] = readiness.ready ? "ok" : readiness.code();
    // The default down, a run goes on with its fallback chain (docs/providers.md): the first of it
    // that is ready keeps the server ready, said as such. Only for what a run falls back on: a
    // default with no model set fails every run as a bad request, whatever its chain.
    std::string answering;
    const bool falls_back = readiness.problem != llm::NotReady::model_not_set;
    const auto chain_deadline = std::chrono::steady_clock::now() + kReadyzFallbackDeadline;
    if (!readiness.ready && falls_back)
        for (const auto& name : app.config().provider.fallback) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(chain_deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            if (readiness_within(app, name, left).ready) {
                answering = name;
                break;
            }
        }
    const bool provider_ok = readiness.ready || !answering.empty();
    if (!answering.empty()) checks["fallback"] = "ok (" + answering + ")";
    json body{{"ready", ok && !disk && provider_ok},
              {"checks", checks},
              {"provider", provider},
              {"model", app.config().provider.model}};
    if (!answering.empty()) {
        body["answering_through"] = answering;
        body["warning"] = {{"code", readiness.code()},
                           {"message", readiness.message + "; runs go on with its fallback '" + answering + "'"}};
    }
    if (!ok) {
        body["error"] = {{"code", "DATABASE_UNAVAILABLE"}, {"message", "the database cannot be read"}};
    } else if (disk) {
        body["error"] = {{"code", "DATA_DIR_UNWRITABLE"}, {"message", *disk}};
    } else if (!provider_ok) {
        body["error"] = {{"code", readiness.code()}, {"message", readiness.message}, {"models", readiness.models}};
    }
    send_json(res, body["ready"].get<bool>() ? 200 : 503, body);
}

// The store's writer (SQLite only) and the plugins' key-value reads, for metrics().
void store_metrics(ServerState& state, const std::function<void(const std::string&)>& line) {
    if (auto writer = state.app.storage().write_stats()) {
        line(
            "# HELP agenthost_store_writes_total Writes committed to the SQLite store.\n# TYPE agenthost_store_writes_total "
            "counter");
        line("agenthost_store_writes_total " + std::to_string(writer->writes));
        line(
            "# HELP agenthost_store_commits_total Commits those writes took: concurrent writes share them.\n# TYPE "
            "agenthost_store_commits_total counter");
        line("agenthost_store_commits_total " + std::to_string(writer->commits));
        line(
            "# HELP agenthost_store_synced_commits_total Commits that synced the log to disk (with full durability, all but"
            " those holding only the intents of repeatable tool calls).\n# TYPE agenthost_store_synced_commits_total counter");
        line("agenthost_store_synced_commits_total " + std::to_string(writer->synced_commits));
        line(
            "# HELP agenthost_store_writes_waiting Writes waiting for the commit in progress.\n# TYPE "
            "agenthost_store_writes_waiting gauge");
        line("agenthost_store_writes_waiting " + std::to_string(writer->waiting));
    }
    const plugins::KvReads kv_reads = state.app.registry().services().run_kv().reads();
    line(
        "# HELP agenthost_plugin_kv_reads_total Plugins' key-value reads, by what answered them: the store, or the copy "
        "a run keeps of its provider's own writes.\n# TYPE agenthost_plugin_kv_reads_total counter");
    line("agenthost_plugin_kv_reads_total{answered_by=\"store\"} " + std::to_string(kv_reads.from_store));
    line("agenthost_plugin_kv_reads_total{answered_by=\"run\"} " + std::to_string(kv_reads.from_run));
}

// Prometheus text: the store's and the queue's own figures, and the hub's (the places where
// concurrency is limited).
void metrics(ServerState& state, Response& res) {
    std::string out;
    auto line = [&](const std::string& text) { out += text + "\n"; };
    // A store that cannot be read leaves its figures out (a counter shown as 0 would read as a reset).
    auto read = state.app.runs().stats();
    const store::JournalStats journal = read ? std::move(*read) : store::JournalStats{};
    line("# HELP agenthost_store_readable Whether the store answered this scrape.\n# TYPE agenthost_store_readable gauge");
    line("agenthost_store_readable " + std::string(read ? "1" : "0"));
    line("# HELP agenthost_runs Runs in the store, by status.\n# TYPE agenthost_runs gauge");
    for (const auto& [status, count] : journal.runs_by_status)
        line("agenthost_runs{status=\"" + status + "\"} " + std::to_string(count));
    line("# HELP agenthost_runs_executing Runs executing in this server.\n# TYPE agenthost_runs_executing gauge");
    line("agenthost_runs_executing " + std::to_string(state.hub.executing()));
    line("# HELP agenthost_runs_waiting Runs waiting for a slot (max_waiting_runs).\n# TYPE agenthost_runs_waiting gauge");
    line("agenthost_runs_waiting " + std::to_string(state.hub.waiting()));
    line("# HELP agenthost_iterations_total Model calls of all runs.\n# TYPE agenthost_iterations_total counter");
    line("# HELP agenthost_tokens_total Tokens of all runs.\n# TYPE agenthost_tokens_total counter");
    if (read) {
        line("agenthost_iterations_total " + std::to_string(journal.iterations));
        line("agenthost_tokens_total{direction=\"input\"} " + std::to_string(journal.input_tokens));
        line("agenthost_tokens_total{direction=\"output\"} " + std::to_string(journal.output_tokens));
    }
    line("# HELP agenthost_tool_calls_total Tool calls by tool and outcome.\n# TYPE agenthost_tool_calls_total counter");
    // Calls of runs (the journal's) and calls made over MCP, added up per tool and outcome.
    std::map<std::pair<std::string, std::string>, int64_t> tool_calls;
    for (const auto& t : journal.tool_calls) tool_calls[{t.tool, t.outcome}] += t.count;
    for (const auto& t : state.app.direct_tool_calls().snapshot()) tool_calls[{t.tool, t.outcome}] += t.count;
    for (const auto& [key, count] : tool_calls)
        line("agenthost_tool_calls_total{tool=\"" + key.first + "\",outcome=\"" + key.second + "\"} " + std::to_string(count));
    // Each family's samples together, after its HELP and TYPE (the text format groups them).
    std::string latency =
        "# HELP agenthost_provider_request_seconds Model request latency.\n"
        "# TYPE agenthost_provider_request_seconds histogram\n";
    std::string depth = "# HELP agenthost_queue_depth Requests waiting for a provider.\n# TYPE agenthost_queue_depth gauge\n";
    std::string fallbacks =
        "# HELP agenthost_provider_fallbacks_total Model calls a provider failed that went on with the next provider of its"
        " fallback chain.\n# TYPE agenthost_provider_fallbacks_total counter\n";
    std::string prompt_tokens =
        "# HELP agenthost_provider_input_tokens_total Prompt tokens of answered model calls, as the provider counted them;"
        " cached=\"true\" the part its prompt cache served.\n# TYPE agenthost_provider_input_tokens_total counter\n";
    for (const auto& lane : state.app.queue().stats()) {
        std::string p = "provider=\"" + lane.provider + "\"";
        for (size_t i = 0; i < lane.bucket_bounds.size(); ++i) {
            char le[32];
            std::snprintf(le, sizeof le, "%g", lane.bucket_bounds[i]);
            latency += "agenthost_provider_request_seconds_bucket{" + p + ",le=\"" + le + "\"} " +
                       std::to_string(lane.bucket_counts[i]) + "\n";
        }
        latency += "agenthost_provider_request_seconds_bucket{" + p + ",le=\"+Inf\"} " + std::to_string(lane.count) + "\n";
        latency += "agenthost_provider_request_seconds_sum{" + p + "} " + std::to_string(lane.sum_s) + "\n";
        latency += "agenthost_provider_request_seconds_count{" + p + "} " + std::to_string(lane.count) + "\n";
        depth += "agenthost_queue_depth{" + p + "} " + std::to_string(lane.waiting) + "\n";
        fallbacks += "agenthost_provider_fallbacks_total{" + p + "} " + std::to_string(lane.fallbacks) + "\n";
        prompt_tokens += "agenthost_provider_input_tokens_total{" + p + ",cached=\"false\"} " +
                         std::to_string(lane.input_tokens - lane.cached_input_tokens) + "\n";
        prompt_tokens +=
            "agenthost_provider_input_tokens_total{" + p + ",cached=\"true\"} " + std::to_string(lane.cached_input_tokens) + "\n";
    }
    out += latency + depth + fallbacks + prompt_tokens;
    store_metrics(state, line);
    res.set_content(out, "text/plain; version=0.0.4");
}

}  // namespace

void add_status_routes(ServerCore& core, ServerState& state) {
    const Access open{.open = true};
    core.get(
        "/health",
        [](const Request&, Response& res) {
            send_json(res, 200, {{"status", "ok"}});
        },
        open);
    core.get(
        "/readyz", [&state](const Request&, Response& res) { readyz(state, res); }, open);
    core.get("/metrics", [&state](const Request&, Response& res) { metrics(state, res); });
    core.get("/api/plugins",
             [&state](const Request&, Response& res) { res.set_content(app::plugins_report(state.app), "application/json"); });
    core.get("/api/resources", [&state](const Request&, Response& res) {
        send_json(res, 200, {{"resources", mcp::resource_list(state.app)}});
    });
    core.get("/api/resources/read", [&state](const Request& req, Response& res) {
        std::string uri = req.param("uri");
        auto contents = mcp::resource_read(state.app, uri);
        if (!contents) return send_error(res, 404, "resource_not_found", "no plugin serves the resource '" + uri + "'");
        send_json(res, 200, *contents);
    });
}

}  // namespace agenthost::server
