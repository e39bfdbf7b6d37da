#include "mcp/log_tap.hpp"

#include "common/bounded_json.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace agenthost::mcp {
namespace {

using nlohmann::json;

LogLevel mcp_level(spdlog::level::level_enum level) {
    static constexpr std::pair<spdlog::level::level_enum, LogLevel> kLevels[] = {
        {spdlog::level::trace, LogLevel::debug}, {spdlog::level::debug, LogLevel::debug},
        {spdlog::level::info, LogLevel::info},   {spdlog::level::warn, LogLevel::warning},
        {spdlog::level::err, LogLevel::error},   {spdlog::level::critical, LogLevel::critical},
    };
    for (const auto& [from, to] : kLevels)
        if (from == level) return to;
    return LogLevel::info;
}

// A plugin's line starts "plugin=NAME " (plugins/host_services.cpp): its logger is the plugin.
std::string plugin_of(std::string_view text) {
    constexpr std::string_view kPrefix = "plugin=";
    if (text.substr(0, kPrefix.size()) != kPrefix) return {};
    text.remove_prefix(kPrefix.size());
    return std::string(text.substr(0, text.find(' ')));
}

// The line without its "plugin=NAME " prefix, which the record's logger says already.
std::string_view without_plugin(std::string_view text) {
    if (text.substr(0, 7) != "plugin=") return text;
    size_t space = text.find(' ');
    return space == std::string_view::npos ? text : text.substr(space + 1);
}

spdlog::sinks::dist_sink_mt* distribution_sink() {
    auto logger = spdlog::default_logger();
    if (!logger) return nullptr;
    for (const auto& sink : logger->sinks())
        if (auto* dist = dynamic_cast<spdlog::sinks::dist_sink_mt*>(sink.get())) return dist;
    return nullptr;
}

}  // namespace

// Called with spdlog's sink lock held: it never logs, and the sessions' locks it takes are never
// held by code that logs.
struct LogTap::Sink : spdlog::sinks::base_sink<std::mutex> {
    std::mutex sessions_mutex;
    std::vector<std::weak_ptr<McpSession>> sessions;

    void sink_it_(const spdlog::details::log_msg& msg) override {
        std::vector<std::shared_ptr<McpSession>> live;
        {
            std::lock_guard lock(sessions_mutex);
            std::erase_if(sessions, [](const auto& s) { return s.expired(); });
            for (const auto& s : sessions)
                if (auto session = s.lock()) live.push_back(std::move(session));
        }
        if (live.empty()) return;
        const LogLevel level = mcp_level(msg.level);
        const std::string_view text(msg.payload.data(), msg.payload.size());
        const std::string plugin = plugin_of(text);
        std::string notification;
        for (const auto& session : live) {
            auto wanted = session->log_level();
            if (!wanted || level < *wanted || session->closed()) continue;
            if (notification.empty())
                notification = json_io::dump({{"jsonrpc", "2.0"},
                                              {"method", "notifications/message"},
                                              {"params",
                                               {{"level", log_level_name(level)},
                                                {"logger", plugin.empty() ? "agenthost" : plugin},
                                                {"data", json_io::repair_utf8(without_plugin(text).substr(0, 16 << 10))}}}});
            session->send_log(plugin, notification);
        }
    }
    void flush_() override {}
};

LogTap::LogTap() : sink_(std::make_shared<Sink>()) {
    if (auto* dist = distribution_sink()) dist->add_sink(sink_);
}

LogTap::~LogTap() {
    if (auto* dist = distribution_sink()) dist->remove_sink(sink_);
}

void LogTap::listen(const std::shared_ptr<McpSession>& session) {
    // Records below the host's own level are not made at all: the logger makes them from the
    // client's level on (the console keeps its own level), for as long as the host runs.
    static constexpr std::pair<LogLevel, spdlog::level::level_enum> kMade[] = {
        {LogLevel::debug, spdlog::level::debug}, {LogLevel::info, spdlog::level::info}, {LogLevel::notice, spdlog::level::info}};
    if (auto wanted = session->log_level(); wanted && distribution_sink())
        for (const auto& [level, made] : kMade)
            if (level == *wanted && made < spdlog::default_logger()->level()) spdlog::default_logger()->set_level(made);
    std::lock_guard lock(sink_->sessions_mutex);
    for (const auto& s : sink_->sessions)
        if (s.lock() == session) return;
    sink_->sessions.push_back(session);
}

}  // namespace agenthost::mcp
