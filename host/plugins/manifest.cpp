#include "plugins/manifest.hpp"

#include <fstream>
#include <sstream>

#include "common/schema_validator.hpp"
#include "common/spelling.hpp"
#include "config/toml_json.hpp"

#include <algorithm>
#include <tuple>

#include <regex>

namespace agenthost::plugins {

Result<Manifest> read_manifest(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{"manifest_invalid", file.string() + ": cannot be read; check that it exists and its permissions"};
    std::stringstream text;
    text << in.rdbuf();
    return parse_manifest(text.str(), file);
}

Result<Manifest> parse_manifest(std::string_view text, const fs::path& file) {
    const std::string name = file.string();
    toml::table root;
    try {
        root = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        return Error{"manifest_invalid",
                     name + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
    }
    // Every problem of the file is collected, one line each, so a plugin author fixes them in one go.
    std::vector<std::string> problems;
    auto fail = [&](const toml::node* node, const std::string& field, const std::string& what) {
        std::string where = name;
        if (node && node->source().begin.line) where += ":" + std::to_string(node->source().begin.line);
        problems.push_back(where + ": field '" + field + "' " + what);
    };
    // A required string field: its value, or nothing (the problem noted).
    auto string_field = [&](const char* field, bool required, std::string& out) -> bool {
        const toml::node* n = root.get(field);
        if (!n) {
            if (required) fail(nullptr, field, "is missing");
            return false;
        }
        if (!n->is_string()) {
            fail(n, field, "must be a string");
            return false;
        }
        out = n->as_string()->get();
        return true;
    };

    for (const auto& entry : root) {  // not a structured binding: clang 14 cannot capture one in the lambda
        const auto& key = entry.first;
        const auto& node = entry.second;
        static const char* known[] = {"name",        "kind",           "library",  "abi",        "version",
                                      "description", "default_config", "settings", "permissions"};
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return key.str() == k; }))
            fail(&node, std::string(key.str()),
                 "is not a manifest field (known: name, kind, library, abi, "
                 "version, description, default_config, settings, permissions)");
    }

    Manifest m;
    m.file = file;
    std::string kind, library, abi;
    string_field("version", true, m.version);
    string_field("description", false, m.description);
    static const std::regex name_pattern("^[a-z][a-z0-9_]{0,63}$");
    if (string_field("name", true, m.name) && !std::regex_match(m.name, name_pattern))
        fail(root.get("name"), "name", "must match ^[a-z][a-z0-9_]{0,63}$ (got \"" + m.name + "\")");
    if (string_field("kind", true, kind)) {
        if (auto parsed_kind = parse_plugin_kind(kind))
            m.kind = *parsed_kind;
        else
            fail(root.get("kind"), "kind", "must be \"tool\" or \"provider\" (got \"" + kind + "\")");
    }
    if (string_field("library", true, library)) {
        fs::path lib(library);
        if (library.empty() || lib.is_absolute() || lib.filename() != lib)
            fail(root.get("library"), "library",
                 "must be a file name next to plugin.toml, e.g. \"" + (m.name.empty() ? "name" : m.name) + ".so\"");
        else
            m.library = fs::absolute(file).parent_path() / lib;
    }
    static const std::regex abi_pattern("^([0-9]{1,4})\\.([0-9]{1,4})$");
    std::smatch match;
    if (string_field("abi", true, abi)) {
        if (!std::regex_match(abi, match, abi_pattern)) {
            fail(root.get("abi"), "abi", "must be \"MAJOR.MINOR\", e.g. \"1.0\" (got \"" + abi + "\")");
        } else {
            m.abi_major = std::stoi(match[1]);
            m.abi_minor = std::stoi(match[2]);
        }
    }
    if (const toml::node* cfg = root.get("default_config")) {
        if (!cfg->is_table())
            fail(cfg, "default_config", "must be a table ([default_config])");
        else
            m.default_config_json = config::toml_to_json(*cfg).dump();
    }
    if (const toml::node* settings = root.get("settings")) {
        const size_t before = problems.size();
        if (!settings->is_table()) fail(settings, "settings", "must be a table ([settings] with one entry per key)");
        nlohmann::json properties = nlohmann::json::object();
        nlohmann::json defaults = nlohmann::json::parse(m.default_config_json);
        static const toml::table kNone;
        for (const auto& entry : settings->is_table() ? *settings->as_table() : kNone) {
            const std::string key(entry.first.str());
            const toml::node& spec_node = entry.second;
            const std::string field = "settings." + key;
            if (!spec_node.is_table()) {
                fail(&spec_node, field, "must be a table such as { type = \"integer\", default = 10, description = \"…\" }");
                continue;
            }
            nlohmann::json spec = config::toml_to_json(spec_node);
            // A misspelt keyword ("minimun") would be ignored and its rule lost: refused by name.
            static const std::vector<std::string> keywords{"type",
                                                           "description",
                                                           "default",
                                                           "format",
                                                           "enum",
                                                           "const",
                                                           "minimum",
                                                           "maximum",
                                                           "exclusiveMinimum",
                                                           "exclusiveMaximum",
                                                           "multipleOf",
                                                           "minLength",
                                                           "maxLength",
                                                           "pattern",
                                                           "items",
                                                           "minItems",
                                                           "maxItems",
                                                           "uniqueItems",
                                                           "properties",
                                                           "required",
                                                           "additionalProperties",
                                                           "title",
                                                           "examples"};
            bool words_ok = true;
            for (const auto& [word, value] : spec.items())
                if (std::find(keywords.begin(), keywords.end(), word) == keywords.end()) {
                    fail(spec_node.as_table()->get(word), field + "." + word,
                         "is not a setting keyword" + spelling::did_you_mean(word, keywords) +
                             " (keywords: type, description, default, minimum, maximum, enum, format, items, …)");
                    words_ok = false;
                }
            static const std::vector<std::string> types{"string", "integer", "number", "boolean", "array", "object"};
            if (!spec.contains("type") || !spec["type"].is_string() ||
                std::find(types.begin(), types.end(), spec["type"].get<std::string>()) == types.end()) {
                fail(spec_node.as_table()->get("type"), field + ".type",
                     "must be one of string, integer, number, boolean, array, object");
                continue;
            }
            if (spec.contains("format") && spec["format"] != "path") {
                fail(spec_node.as_table()->get("format"), field + ".format",
                     "can only be \"path\" (resolved against the config file)");
                continue;
            }
            if (!words_ok) continue;
            if (spec.contains("default")) {
                auto invalid = schema::validate_against_schema(spec["default"], spec);
                if (!invalid.empty()) {
                    std::string why = invalid[0];
                    if (why.rfind("the arguments: ", 0) == 0) why.erase(0, 15);  // the value is the default itself
                    fail(spec_node.as_table()->get("default"), field + ".default", "does not fit its own declaration: " + why);
                    continue;
                }
                if (!defaults.contains(key)) defaults[key] = spec["default"];
            }
            properties[key] = std::move(spec);
        }
        if (problems.size() == before) {
            nlohmann::json schema{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
            if (auto problem = schema::check_tool_schema(schema); !problem.empty()) {
                fail(settings, "settings", "is not a valid declaration: " + problem);
            } else {
                m.settings_schema_json = schema.dump();
                m.default_config_json = defaults.dump();
            }
        }
    }
    if (const toml::node* permissions = root.get("permissions")) {
        std::string where = name + ":" + std::to_string(permissions->source().begin.line);
        auto parsed = parse_permissions(config::toml_to_json(*permissions).dump(), where);
        if (!parsed) {
            problems.push_back(parsed.error().message);
        } else {
            if (!m.settings_schema_json.empty()) {  // a misspelt {setting:KEY} would grant nothing in silence
                const nlohmann::json declared = nlohmann::json::parse(m.settings_schema_json)["properties"];
                std::vector<std::string> keys;
                for (const auto& item : declared.items()) keys.push_back(item.key());
                for (const auto& used : setting_names(*parsed))
                    if (!declared.contains(used))
                        fail(permissions, "permissions",
                             "names the setting '" + used + "', which [settings] does not declare" +
                                 spelling::did_you_mean(used, keys) + " (declared: " + spelling::join_names(keys) + ")");
            }
            m.permissions = std::move(*parsed);
        }
    }
    if (!problems.empty()) {
        std::string all;
        for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
        return Error{"manifest_invalid", all};
    }
    return m;
}

}  // namespace agenthost::plugins
