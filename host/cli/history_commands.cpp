// runs, conversations, show and compact: what the store holds.
#include "cli/command_handlers.hpp"

#include "app/reports.hpp"
#include "cli/turn_session.hpp"

#include <iostream>

namespace agenthost::cli {

using nlohmann::json;

int cmd_runs(Context& ctx) {
    HostApp& app = *ctx.app;
    const std::string conversation = ctx.invocation.value("--conversation");
    (void)app.runs().recover_interrupted();  // a run still marked running is listed as it is
    auto read = app.runs().runs(conversation, 200);
    if (!read) return store_unreadable(read.error());
    const std::vector<store::RunRecord>& runs = *read;
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& r : runs) out.push_back(json::parse(app::run_report(r)));
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    if (runs.empty()) {
        std::cout << "No runs" << (conversation.empty() ? "" : " in conversation " + conversation) << ".\n";
        return kExitOk;
    }
    std::printf("%6s  %-11s %-8s %-10s %-19s %-16s %5s %5s %9s  %-16s %s\n", "RUN", "STATUS", "MODE", "PROVIDER", "CONVERSATION",
                "STARTED", "STEPS", "CALLS", "TOKENS", "RESULT", "PROMPT");
    for (const auto& r : runs) {
        std::string prompt = r.prompt.size() > 40 ? r.prompt.substr(0, 40) + "…" : r.prompt;
        for (char& c : prompt)
            if (c == '\n' || c == '\r') c = ' ';
        std::string result = !r.error_code.empty() ? r.error_code
                             : r.stop_reason       ? std::string(stop_reason_name(*r.stop_reason))
                                                   : "";
        std::printf("%6lld  %-11s %-8s %-10s %-19s %-16s %5d %5d %9lld  %-16s %s\n", static_cast<long long>(r.id),
                    std::string(run_status_name(r.status)).c_str(), mode_name(r.mode),
                    r.provider.empty() ? "default" : r.provider.c_str(), r.conversation.c_str(), clock_time(r.started_at).c_str(),
                    r.counters.iterations, r.counters.tool_calls,
                    static_cast<long long>(r.counters.input_tokens) + static_cast<long long>(r.counters.output_tokens),
                    result.empty() ? "-" : result.c_str(), prompt.c_str());
    }
    return kExitOk;
}

int cmd_conversations(Context& ctx) {
    auto read = ctx.app->runs().conversations(500);
    if (!read) return store_unreadable(read.error());
    const std::vector<store::ConversationSummary>& list = *read;
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& c : list)
            out.push_back({{"id", c.id},
                           {"created_at", c.created_at},
                           {"updated_at", c.updated_at},
                           {"runs", c.runs},
                           {"last_prompt", c.last_prompt},
                           {"title", c.title}});
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    if (list.empty()) {
        std::cout << "No conversations yet (agenthost chat, or agenthost run \"…\").\n";
        return kExitOk;
    }
    std::printf("%-22s %-16s %4s  %s\n", "CONVERSATION", "UPDATED", "RUNS", "LAST PROMPT");
    for (const auto& c : list) {
        std::string prompt = c.last_prompt.size() > 60 ? c.last_prompt.substr(0, 60) + "…" : c.last_prompt;
        if (!c.title.empty()) prompt.insert(0, "\"" + c.title + "\": ");  // a title holds no control characters
        for (char& ch : prompt)
            if (ch == '\n' || ch == '\r') ch = ' ';
        std::printf("%-22s %-16s %4lld  %s\n", c.id.c_str(), clock_time(c.updated_at).c_str(), static_cast<long long>(c.runs),
                    prompt.c_str());
    }
    return kExitOk;
}

int cmd_show(Context& ctx) {
    const auto& args = ctx.invocation.args;
    if (args.size() != 1) return usage_error("show takes one conversation id (agenthost conversations lists them)");
    auto read = ctx.app->runs().all(args[0]);
    if (!read) return store_unreadable(read.error());
    const std::vector<store::StoredMessage>& messages = *read;
    if (messages.empty()) {
        std::cerr << "agenthost: no conversation '" << args[0] << "' (agenthost conversations lists them)\n";
        return kExitUsage;
    }
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& m : messages) {
            json body = json::parse(m.body, nullptr, false);
            json entry{{"turn", m.turn}, {"run", m.run}, {"message", body.is_discarded() ? json(m.body) : body}};
            if (!m.result.empty()) entry["result"] = json::parse(m.result, nullptr, false);
            out.push_back(std::move(entry));
        }
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    // A run that did not complete shows how it ended, under its messages.
    auto read_runs = ctx.app->runs().runs(args[0], 10000);
    if (!read_runs) return store_unreadable(read_runs.error());
    std::map<int64_t, store::RunRecord> runs;
    for (const auto& r : *read_runs) runs[r.id] = r;
    auto ending = [&](int64_t run) {
        auto it = runs.find(run);
        if (it == runs.end() || it->second.status == RunStatus::completed) return;
        const auto& r = it->second;
        std::cout << "[run " << r.id << " " << run_status_name(r.status)
                  << (r.error_code.empty() ? "" : " (" + r.error_code + ")") << (r.error.empty() ? "" : ": " + r.error) << "]\n";
    };
    int64_t current = -1;
    for (const auto& m : messages) {
        if (m.run != current) {
            if (current >= 0) ending(current);
            current = m.run;
        }
        json body = json::parse(m.body, nullptr, false);
        if (!body.is_object()) continue;
        std::string role = body.value("role", "");
        std::string content = body.contains("content") && body["content"].is_string() ? body["content"].get<std::string>() : "";
        if (role == "user")
            std::cout << "\n> " << content << "\n";
        else if (role == "assistant") {
            if (!content.empty()) std::cout << content << "\n";
            if (body.contains("tool_calls") && body["tool_calls"].is_array())
                for (const auto& call : body["tool_calls"]) {
                    const json& fn = call.contains("function") ? call["function"] : call;
                    std::string arguments =
                        fn.contains("arguments")
                            ? (fn["arguments"].is_string() ? fn["arguments"].get<std::string>() : fn["arguments"].dump())
                            : "{}";
                    if (arguments.size() > 300) arguments = arguments.substr(0, 300) + "…";
                    std::cout << "→ " << fn.value("name", "?") << " " << arguments << "\n";
                }
        } else if (role == "tool") {
            if (content.size() > 300) content = content.substr(0, 300) + "…";
            for (char& c : content)
                if (c == '\n' || c == '\r') c = ' ';
            std::cout << "← " << content << "\n";
        }
    }
    if (current >= 0) ending(current);
    return kExitOk;
}

int cmd_compact(Context& ctx) {
    HostApp& app = *ctx.app;
    const auto& cfg = app.config().store;
    auto deleted = app.runs().compact(cfg.keep_runs, cfg.keep_days);
    if (!deleted) {
        std::cerr << "agenthost: " << deleted.error().message << "\n";
        return kExitTurnFailed;
    }
    std::cout << "removed " << *deleted << " checkpoints and journal rows of runs beyond the newest " << cfg.keep_runs
              << " per conversation or older than " << cfg.keep_days << " days (messages are kept)";
    auto reclaimed = app.storage().reclaim_space();
    if (!reclaimed) {  // PostgreSQL reclaims space with its own (auto)vacuum
        std::cout << "\n";
        return kExitOk;
    }
    for (const auto& problem : reclaimed->problems) std::cerr << "agenthost: " << problem << "\n";
    std::cout << "; database and its log " << reclaimed->before / 1024 << " KiB -> " << reclaimed->after / 1024 << " KiB\n";
    return kExitOk;
}

}  // namespace agenthost::cli
