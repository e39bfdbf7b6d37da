#include "plugins/plugin_types.hpp"

#include <array>
#include <utility>

namespace agenthost::plugins {

namespace {

template <typename Enum, size_t N>
std::optional<Enum> parse(const std::array<std::pair<Enum, std::string_view>, N>& table, std::string_view word) {
    for (const auto& [value, text] : table)
        if (text == word) return value;
    return std::nullopt;
}

template <typename Enum, size_t N>
std::string_view word(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
    for (const auto& [v, text] : table)
        if (v == value) return text;
    return "?";
}

constexpr std::array kKinds{std::pair{PluginKind::tool, std::string_view("tool")},
                            std::pair{PluginKind::provider, std::string_view("provider")}};
constexpr std::array kStatuses{
    std::pair{PluginStatus::loaded, std::string_view("loaded")}, std::pair{PluginStatus::failed, std::string_view("failed")},
    std::pair{PluginStatus::disabled, std::string_view("disabled")}, std::pair{PluginStatus::unused, std::string_view("unused")}};

}  // namespace

std::string_view name(PluginKind kind) { return word(kKinds, kind); }
std::string_view name(const std::optional<PluginKind>& kind) { return kind ? name(*kind) : ""; }
std::string_view name(PluginStatus status) { return word(kStatuses, status); }
std::string_view name(Isolation isolation) { return choice_name<Isolation>(kIsolations, isolation); }
std::optional<PluginKind> parse_plugin_kind(std::string_view text) { return parse(kKinds, text); }
std::optional<Isolation> parse_isolation(std::string_view text) { return choice_from<Isolation>(kIsolations, text); }

}  // namespace agenthost::plugins
