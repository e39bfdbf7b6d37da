#include "cli/reports.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::cli {

using nlohmann::json;

std::string plugins_report(HostApp& app) {
    json out{{"abi", AH_ABI_VERSION_STRING}, {"plugins", json::array()}, {"plugin_dirs", json::array()}};
    for (const auto& p : app.registry().plugins()) {
        json j{{"name", p.name},           {"kind", p.kind},
               {"version", p.version},     {"abi", p.abi},
               {"description", p.description},
               {"file", p.library.string()}, {"manifest", p.manifest.string()},
               {"status", app.registry().status_now(p)},       {"tools", p.tools},
               {"error", nullptr},         {"warnings", p.warnings}};
        if (p.error) j["error"] = {{"code", p.error->code}, {"message", p.error->message}};
        j["isolation"] = p.isolation;
        if (auto health = app.registry().process_health(p.name))
            j["process"] = {{"restarts", health->restarts},
                            {"recent_failures", health->recent_failures},
                            {"disabled", health->disabled},
                            {"last_failure", health->last_failure.empty() ? json(nullptr) : json(health->last_failure)}};
        j["refused_tools"] = json::array();
        for (const auto& r : p.refused_tools) j["refused_tools"].push_back({{"name", r.name}, {"reason", r.reason}});
        out["plugins"].push_back(std::move(j));
    }
    for (const auto& d : app.config().plugin_dirs) out["plugin_dirs"].push_back(d.string());
    return out.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string run_report(const store::RunRecord& r) {
    return json{{"id", r.id},
                {"conversation", r.conversation},
                {"turn", r.turn},
                {"status", r.status},
                {"mode", r.mode},
                {"provider", r.provider},
                {"prompt", r.prompt},
                {"stop_reason", r.stop_reason},
                {"error_code", r.error_code},
                {"error", r.error},
                {"answer", r.answer},
                {"iterations", r.counters.iterations},
                {"tool_calls", r.counters.tool_calls},
                {"input_tokens", r.counters.input_tokens},
                {"output_tokens", r.counters.output_tokens},
                {"started_at", r.started_at},
                {"ended_at", r.ended_at == 0 ? json(nullptr) : json(r.ended_at)}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace agenthost::cli
