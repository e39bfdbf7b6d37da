#include "plugins/manifest.hpp"

#include <fstream>
#include <sstream>

#include "common/schema_validator.hpp"
#include "common/spelling.hpp"
#include "config/toml_json.hpp"
#include "plugins/plugin_fault.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace agenthost::plugins {

Result<std::string> read_manifest_text(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return plugin_error(PluginFault::manifest_invalid,
                            file.string() + ": cannot be read; check that it exists and its permissions");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

Result<Manifest> read_manifest(const fs::path& file) {
    auto text = read_manifest_text(file);
    if (!text) return text.error();
    return parse_manifest(*text, file);
}

namespace {

// "MAJOR.MINOR", each of 1 to 4 digits; nullopt for anything else.
std::optional<std::pair<int, int>> abi_version(std::string_view text) {
    auto number = [](std::string_view digits) -> std::optional<int> {
        unsigned value = 0;  // unsigned: from_chars takes no sign
        auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || digits.size() > 4 || error != std::errc() || end != digits.data() + digits.size())
            return std::nullopt;
        return static_cast<int>(value);
    };
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    auto major = number(text.substr(0, dot)), minor = number(text.substr(dot + 1));
    if (!major || !minor) return std::nullopt;
    return std::pair(*major, *minor);
}

// The fields a plugin.toml may have.
const std::vector<std::string> kManifestFields{"name",        "kind",           "library",  "abi",        "version",
                                               "description", "default_config", "settings", "permissions"};

// JSON Schema keywords a [settings] entry may use: a misspelt one ("minimun") would be ignored
// and its rule lost, so it is refused by name.
const std::vector<std::string> kSettingKeywords{
    "type",    "description",      "default",          "format",      "enum",       "const",     "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",  "minLength",  "maxLength", "pattern",
    "items",   "minItems",         "maxItems",         "uniqueItems", "properties", "required",  "additionalProperties",
    "title",   "examples"};
const std::vector<std::string> kSettingTypes{"string", "integer", "number", "boolean", "array", "object"};

// Reads one plugin.toml, collecting every problem, one line each, so a plugin author fixes them in one go.
class ManifestReader {
public:
    ManifestReader(const toml::table& root, const fs::path& file) : root_(root), name_(file.string()) { m_.file = file; }

    Result<Manifest> read() {
        only_known_fields();
        read_identity();
        read_library_and_abi();
        if (const toml::node* cfg = root_.get("default_config")) {
            if (!cfg->is_table())
                fail(cfg, "default_config", "must be a table ([default_config])");
            else
                m_.default_config_json = config::toml_to_json(*cfg).dump();
        }
        if (const toml::node* settings = root_.get("settings")) read_settings(*settings);
        if (const toml::node* permissions = root_.get("permissions")) read_permissions(*permissions);
        if (!problems_.empty()) {
            std::string all;
            for (const auto& p : problems_) all += (all.empty() ? "" : "\n") + p;
            return plugin_error(PluginFault::manifest_invalid, all);
        }
        return std::move(m_);
    }

private:
    void fail(const toml::node* node, const std::string& field, const std::string& what) {
        std::string where = name_;
        if (node && node->source().begin.line) where += ":" + std::to_string(node->source().begin.line);
        problems_.push_back(where + ": field '" + field + "' " + what);
    }

    // A string field: its value, or false (the problem noted when it is required or not a string).
    bool string_field(const char* field, bool required, std::string& out) {
        const toml::node* n = root_.get(field);
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
    }

    void only_known_fields() {
        for (const auto& [key, node] : root_)
            if (std::find(kManifestFields.begin(), kManifestFields.end(), key.str()) == kManifestFields.end())
                fail(&node, std::string(key.str()),
                     "is not a manifest field (known: " + spelling::join_names(kManifestFields) + ")");
    }

    void read_identity() {
        std::string kind;
        string_field("version", true, m_.version);
        string_field("description", false, m_.description);
        if (string_field("name", true, m_.name) && !spelling::is_name(m_.name, 64, false))
            fail(root_.get("name"), "name", "must match ^[a-z][a-z0-9_]{0,63}$ (got \"" + m_.name + "\")");
        if (string_field("kind", true, kind)) {
            if (auto parsed_kind = parse_plugin_kind(kind))
                m_.kind = *parsed_kind;
            else
                fail(root_.get("kind"), "kind", "must be \"tool\" or \"provider\" (got \"" + kind + "\")");
        }
    }

    void read_library_and_abi() {
        std::string library, abi;
        if (string_field("library", true, library)) {
            fs::path lib(library);
            if (library.empty() || lib.is_absolute() || lib.filename() != lib)
                fail(root_.get("library"), "library",
                     "must be a file name next to plugin.toml, e.g. \"" + (m_.name.empty() ? "name" : m_.name) + ".so\"");
            else
                m_.library = fs::absolute(m_.file).parent_path() / lib;
        }
        if (!string_field("abi", true, abi)) return;
        auto version = abi_version(abi);
        if (!version) return fail(root_.get("abi"), "abi", "must be \"MAJOR.MINOR\", e.g. \"1.0\" (got \"" + abi + "\")");
        m_.abi_major = version->first;
        m_.abi_minor = version->second;
    }

    // One [settings] entry checked: its keywords, type, format and default. Returns its schema, or
    // nothing (the problem noted).
    std::optional<nlohmann::json> setting_spec(const std::string& field, const toml::node& spec_node) {
        if (!spec_node.is_table()) {
            fail(&spec_node, field, "must be a table such as { type = \"integer\", default = 10, description = \"…\" }");
            return std::nullopt;
        }
        nlohmann::json spec = config::toml_to_json(spec_node);
        bool words_ok = true;
        for (const auto& [word, value] : spec.items())
            if (std::find(kSettingKeywords.begin(), kSettingKeywords.end(), word) == kSettingKeywords.end()) {
                std::string why = "is not a setting keyword";
                why += spelling::did_you_mean(word, kSettingKeywords);
                why += " (keywords: type, description, default, minimum, maximum, enum, format, items, …)";
                std::string at = field;
                at.append(".").append(word);
                fail(spec_node.as_table()->get(word), at, why);
                words_ok = false;
            }
        if (!spec.contains("type") || !spec["type"].is_string() ||
            std::find(kSettingTypes.begin(), kSettingTypes.end(), spec["type"].get<std::string>()) == kSettingTypes.end()) {
            fail(spec_node.as_table()->get("type"), field + ".type",
                 "must be one of string, integer, number, boolean, array, object");
            return std::nullopt;
        }
        if (spec.contains("format") && spec["format"] != "path") {
            fail(spec_node.as_table()->get("format"), field + ".format",
                 "can only be \"path\" (resolved against the config file)");
            return std::nullopt;
        }
        if (!words_ok) return std::nullopt;
        if (spec.contains("default")) {
            auto invalid = schema::validate_against_schema(spec["default"], spec);
            if (!invalid.empty()) {
                std::string why = invalid[0];
                if (why.rfind("the arguments: ", 0) == 0) why.erase(0, 15);  // the value is the default itself
                fail(spec_node.as_table()->get("default"), field + ".default", "does not fit its own declaration: " + why);
                return std::nullopt;
            }
        }
        return spec;
    }

    void read_settings(const toml::node& settings) {
        const size_t before = problems_.size();
        if (!settings.is_table()) fail(&settings, "settings", "must be a table ([settings] with one entry per key)");
        nlohmann::json properties = nlohmann::json::object();
        nlohmann::json defaults = nlohmann::json::parse(m_.default_config_json);
        static const toml::table kNone;
        for (const auto& [key, spec_node] : settings.is_table() ? *settings.as_table() : kNone) {
            const std::string setting(key.str());
            auto spec = setting_spec("settings." + setting, spec_node);
            if (!spec) continue;
            if (spec->contains("default") && !defaults.contains(setting)) defaults[setting] = (*spec)["default"];
            properties[setting] = std::move(*spec);
        }
        if (problems_.size() != before) return;
        nlohmann::json schema{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
        if (auto problem = schema::check_tool_schema(schema); !problem.empty())
            return fail(&settings, "settings", "is not a valid declaration: " + problem);
        m_.settings_schema_json = schema.dump();
        m_.default_config_json = defaults.dump();
    }

    void read_permissions(const toml::node& permissions) {
        std::string where = name_ + ":" + std::to_string(permissions.source().begin.line);
        auto parsed = parse_permissions(config::toml_to_json(permissions).dump(), where);
        if (!parsed) return problems_.push_back(parsed.error().message);
        if (!m_.settings_schema_json.empty()) {  // a misspelt {setting:KEY} would grant nothing in silence
            const nlohmann::json declared = nlohmann::json::parse(m_.settings_schema_json)["properties"];
            std::vector<std::string> keys;
            for (const auto& item : declared.items()) keys.push_back(item.key());
            for (const auto& used : setting_names(*parsed))
                if (!declared.contains(used))
                    fail(&permissions, "permissions",
                         "names the setting '" + used + "', which [settings] does not declare" +
                             spelling::did_you_mean(used, keys) + " (declared: " + spelling::join_names(keys) + ")");
        }
        m_.permissions = std::move(*parsed);
    }

    const toml::table& root_;
    const std::string name_;
    Manifest m_;
    std::vector<std::string> problems_;
};

}  // namespace

Result<Manifest> parse_manifest(std::string_view text, const fs::path& file) {
    toml::table root;
    try {
        root = toml::parse(text, file.string());
    } catch (const toml::parse_error& e) {
        return plugin_error(PluginFault::manifest_invalid,
                            file.string() + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
    }
    return ManifestReader(root, file).read();
}

}  // namespace agenthost::plugins
