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
        return Error{"manifest_invalid", name + ":" + std::to_string(e.source().begin.line) + ": " +
                                             std::string(e.description())};
    }
    auto fail = [&](const toml::node* node, const std::string& field, const std::string& what) -> Error {
        std::string where = name;
        if (node && node->source().begin.line) where += ":" + std::to_string(node->source().begin.line);
        return Error{"manifest_invalid", where + ": field '" + field + "' " + what};
    };
    auto string_field = [&](const char* field, bool required, std::string& out) -> std::optional<Error> {
        const toml::node* n = root.get(field);
        if (!n) {
            if (required) return fail(nullptr, field, "is missing");
            return std::nullopt;
        }
        if (!n->is_string()) return fail(n, field, "must be a string");
        out = n->as_string()->get();
        return std::nullopt;
    };

    for (const auto& entry : root) {  // not a structured binding: clang 14 cannot capture one in the lambda
        const auto& key = entry.first;
        const auto& node = entry.second;
        static const char* known[] = {"name",    "kind",        "library",        "abi",
                                      "version", "description", "default_config", "settings",
                                      "permissions"};
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return key.str() == k; }))
            return fail(&node, std::string(key.str()), "is not a manifest field (known: name, kind, library, abi, "
                                                        "version, description, default_config, settings, permissions)");
    }

    Manifest m;
    m.file = file;
    std::string kind, library, abi;
    for (auto [field, required, out] : {std::tuple{"name", true, &m.name}, std::tuple{"kind", true, &kind},
                                        std::tuple{"library", true, &library}, std::tuple{"abi", true, &abi},
                                        std::tuple{"version", true, &m.version},
                                        std::tuple{"description", false, &m.description}}) {
        if (auto e = string_field(field, required, *out)) return *e;
    }
    static const std::regex name_pattern("^[a-z][a-z0-9_]{0,63}$");
    if (!std::regex_match(m.name, name_pattern))
        return fail(root.get("name"), "name", "must match ^[a-z][a-z0-9_]{0,63}$ (got \"" + m.name + "\")");
    auto parsed_kind = parse_plugin_kind(kind);
    if (!parsed_kind) return fail(root.get("kind"), "kind", "must be \"tool\" or \"provider\" (got \"" + kind + "\")");
    m.kind = *parsed_kind;
    fs::path lib(library);
    if (library.empty() || lib.is_absolute() || lib.filename() != lib)
        return fail(root.get("library"), "library", "must be a file name next to plugin.toml, e.g. \"" + m.name + ".so\"");
    m.library = fs::absolute(file).parent_path() / lib;
    static const std::regex abi_pattern("^([0-9]{1,4})\\.([0-9]{1,4})$");
    std::smatch match;
    if (!std::regex_match(abi, match, abi_pattern))
        return fail(root.get("abi"), "abi", "must be \"MAJOR.MINOR\", e.g. \"1.0\" (got \"" + abi + "\")");
    m.abi_major = std::stoi(match[1]);
    m.abi_minor = std::stoi(match[2]);
    if (const toml::node* cfg = root.get("default_config")) {
        if (!cfg->is_table()) return fail(cfg, "default_config", "must be a table ([default_config])");
        m.default_config_json = config::toml_to_json(*cfg).dump();
    }
    if (const toml::node* settings = root.get("settings")) {
        if (!settings->is_table()) return fail(settings, "settings", "must be a table ([settings] with one entry per key)");
        nlohmann::json properties = nlohmann::json::object();
        nlohmann::json defaults = nlohmann::json::parse(m.default_config_json);
        for (const auto& entry : *settings->as_table()) {
            const std::string key(entry.first.str());
            const toml::node& spec_node = entry.second;
            const std::string field = "settings." + key;
            if (!spec_node.is_table())
                return fail(&spec_node, field, "must be a table such as { type = \"integer\", default = 10, description = \"…\" }");
            nlohmann::json spec = config::toml_to_json(spec_node);
            // A misspelt keyword ("minimun") would be ignored and its rule lost: refused by name.
            static const std::vector<std::string> keywords{
                "type",      "description", "default",  "format",   "enum",     "const",      "minimum",   "maximum",
                "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "items",
                "minItems",  "maxItems",    "uniqueItems", "properties", "required", "additionalProperties", "title", "examples"};
            for (const auto& [word, value] : spec.items())
                if (std::find(keywords.begin(), keywords.end(), word) == keywords.end())
                    return fail(spec_node.as_table()->get(word), field + "." + word,
                                "is not a setting keyword" + spelling::did_you_mean(word, keywords) +
                                    " (keywords: type, description, default, minimum, maximum, enum, format, items, …)");
            static const std::vector<std::string> types{"string", "integer", "number", "boolean", "array", "object"};
            if (!spec.contains("type") || !spec["type"].is_string() ||
                std::find(types.begin(), types.end(), spec["type"].get<std::string>()) == types.end())
                return fail(spec_node.as_table()->get("type"), field + ".type",
                            "must be one of string, integer, number, boolean, array, object");
            if (spec.contains("format") && spec["format"] != "path")
                return fail(spec_node.as_table()->get("format"), field + ".format", "can only be \"path\" (resolved against the config file)");
            if (spec.contains("default")) {
                auto problems = schema::validate_against_schema(spec["default"], spec);
                if (!problems.empty()) {
                    std::string why = problems[0];
                    if (why.rfind("the arguments: ", 0) == 0) why.erase(0, 15);  // the value is the default itself
                    return fail(spec_node.as_table()->get("default"), field + ".default", "does not fit its own declaration: " + why);
                }
                if (!defaults.contains(key)) defaults[key] = spec["default"];
            }
            properties[key] = std::move(spec);
        }
        nlohmann::json schema{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
        if (auto problem = schema::check_tool_schema(schema); !problem.empty())
            return fail(settings, "settings", "is not a valid declaration: " + problem);
        m.settings_schema_json = schema.dump();
        m.default_config_json = defaults.dump();
    }
    if (const toml::node* permissions = root.get("permissions")) {
        std::string where = name + ":" + std::to_string(permissions->source().begin.line);
        auto parsed = parse_permissions(config::toml_to_json(*permissions).dump(), where);
        if (!parsed) return Error{"manifest_invalid", parsed.error().message};
        if (!m.settings_schema_json.empty()) {  // a misspelt {setting:KEY} would grant nothing in silence
            const nlohmann::json declared = nlohmann::json::parse(m.settings_schema_json)["properties"];
            std::vector<std::string> keys;
            for (const auto& item : declared.items()) keys.push_back(item.key());
            for (const auto& used : setting_names(*parsed))
                if (!declared.contains(used))
                    return fail(permissions, "permissions", "names the setting '" + used + "', which [settings] does not declare" +
                                                                spelling::did_you_mean(used, keys) + " (declared: " +
                                                                spelling::join_names(keys) + ")");
        }
        m.permissions = std::move(*parsed);
    }
    return m;
}

}  // namespace agenthost::plugins
