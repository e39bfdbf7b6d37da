// TOML → JSON, for the tables handed to plugins (they read their settings as JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <sstream>

namespace agenthost::config {

// Tables and arrays map to objects and arrays; dates and times to their TOML text.
inline nlohmann::json toml_to_json(const toml::node& node) {
    nlohmann::json out;
    node.visit([&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, toml::table>) {
            out = nlohmann::json::object();
            for (const auto& [k, child] : v) out[std::string(k.str())] = toml_to_json(child);
        } else if constexpr (std::is_same_v<T, toml::array>) {
            out = nlohmann::json::array();
            for (const auto& child : v) out.push_back(toml_to_json(child));
        } else if constexpr (std::is_same_v<T, toml::value<std::string>> || std::is_same_v<T, toml::value<int64_t>> ||
                             std::is_same_v<T, toml::value<double>> || std::is_same_v<T, toml::value<bool>>) {
            out = v.get();
        } else {
            std::ostringstream text;
            text << v;
            out = text.str();
        }
    });
    return out;
}

}  // namespace agenthost::config
