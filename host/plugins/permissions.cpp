#include "plugins/permissions.hpp"

#include "common/spelling.hpp"
#include "plugins/http_client.hpp"
#include "plugins/plugin_fault.hpp"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace agenthost::plugins {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kDataPlaceholder = "{data}";
constexpr std::string_view kSettingPlaceholder = "{setting:";
constexpr std::string_view kSettingFolderPlaceholder = "{setting_folder:";

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// "{setting:KEY}" or "{setting_folder:KEY}" → KEY; nullopt for anything else.
std::optional<std::string> setting_key(std::string_view entry, std::string_view placeholder) {
    if (entry.size() <= placeholder.size() + 1 || entry.substr(0, placeholder.size()) != placeholder || entry.back() != '}')
        return std::nullopt;
    std::string key(entry.substr(placeholder.size(), entry.size() - placeholder.size() - 1));
    if (key.empty() || key.find_first_of("{}/ ") != std::string::npos) return std::nullopt;
    return key;
}

// 1..65535, or "*" (any: 0).
std::optional<int> parse_port(std::string_view text) {
    if (text == "*") return 0;
    int port = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535) return std::nullopt;
    return port;
}

// "HOST:PORT", "[V6]:PORT", "any", "loopback", "loopback:PORT".
std::optional<Destination> parse_destination(std::string_view text) {
    if (text == "any") return Destination{"*", 0};
    if (text == "loopback") return Destination{"loopback", 0};
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos || text.find(':') != colon) return std::nullopt;
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    auto number = parse_port(port);
    if (host.empty() || !number || host.find_first_of("/@ ") != std::string_view::npos) return std::nullopt;
    return Destination{lower(host), *number};
}

// An http(s) URL's host and port, read as the HTTP service reads it, or HOST:PORT.
std::optional<Destination> destination_of(std::string_view value) {
    const auto scheme_end = value.find("://");
    if (scheme_end == std::string_view::npos) return parse_destination(value);
    if (const std::string scheme = lower(value.substr(0, scheme_end)); scheme != "http" && scheme != "https") return std::nullopt;
    auto target = url_host_port(std::string(value));
    if (!target || target->host.empty()) return std::nullopt;
    return Destination{lower(target->host), target->port};
}

// Every value a setting holds: itself, an array's items, a table's values, recursively; with a
// dotted key, FIELD of each element. Empty strings and nulls are "unset"; numbers and booleans
// come as their JSON text, to be refused as paths or destinations by name.
void collect_strings(const json& value, std::vector<std::string>& out) {
    if (value.is_string()) {
        if (!value.get<std::string>().empty()) out.push_back(value.get<std::string>());
    } else if (value.is_array() || value.is_object()) {
        for (const auto& item : value) collect_strings(item, out);
    } else if (!value.is_null()) {
        out.push_back(value.dump());
    }
}
void collect_field(const json& value, std::string_view path, std::vector<std::string>& out) {
    if (path.empty()) return collect_strings(value, out);
    if (value.is_array()) {
        for (const auto& item : value) collect_field(item, path, out);
        return;
    }
    auto dot = path.find('.');
    std::string field(path.substr(0, dot));
    if (value.is_object() && value.contains(field))
        collect_field(value[field], dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1), out);
}

bool is_variable_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_path_entry(std::string_view entry) {
    if (entry == kDataPlaceholder || entry.rfind(std::string(kDataPlaceholder) + "/", 0) == 0) return true;
    if (setting_key(entry, kSettingPlaceholder) || setting_key(entry, kSettingFolderPlaceholder)) return true;
    return !entry.empty() && entry.front() == '/';
}

// "/a/b/../c/" → "/a/c": absolute, no dots, no trailing slash; links not followed.
fs::path lexical(const fs::path& path) {
    fs::path out = fs::absolute(path).lexically_normal();
    if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
    return out;
}

fs::path real_path(const fs::path& path) {
    std::error_code ec;
    fs::path out = fs::weakly_canonical(path, ec);
    return ec ? path : lexical(out);
}

bool under(const fs::path& path, const fs::path& folder);

// Links are followed only where the plugin cannot have put them. Inside the real location of one
// of its write grants, anything may be a link it planted (its granted {data}/cache swapped for a
// link to "/"), so a path is resolved one component at a time, following links only until it
// enters such a location; the rest keeps its spelling and the sandbox refuses to follow a link in
// it. The locations are found the same way, until they stop changing (a write grant spelt through
// an operator's link, /var/run → /run, is found where it really is). Elsewhere, the operator's
// links (/srv/media → /mnt/disk) resolve.
fs::path walk(const fs::path& path, const std::vector<fs::path>& zones) {
    fs::path at = path.root_path();
    for (auto part = std::next(path.begin()); part != path.end(); ++part) {
        bool inside = std::any_of(zones.begin(), zones.end(), [&](const fs::path& z) { return under(at, z); });
        at = inside ? at / *part : real_path(at / *part);
    }
    return at;
}

Status settle_links(std::vector<fs::path>& read, std::vector<fs::path>& write) {
    std::vector<fs::path> zones;
    for (int round = 0;; ++round) {
        std::vector<fs::path> next;
        next.reserve(write.size());
        for (const auto& w : write) next.push_back(walk(w, zones));
        if (next == zones) break;
        if (round == 8)
            return plugin_error(PluginFault::permissions_invalid,
                                "the write permissions resolve differently each time through links");
        zones = std::move(next);
    }
    for (auto* list : {&read, &write}) {
        std::vector<fs::path> unique;
        for (const auto& p : *list)
            if (fs::path settled = walk(p, zones); std::find(unique.begin(), unique.end(), settled) == unique.end())
                unique.push_back(settled);
        *list = std::move(unique);
    }
    return Ok{};
}

bool under(const fs::path& path, const fs::path& folder) {
    auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
    return f == folder.end();
}

std::string text_of(const fs::path& p) { return p.string(); }
std::string text_of(const Destination& d) { return describe(d); }
std::string text_of(const std::string& s) { return s; }

// "a, b, c", or "none".
template <typename T>
std::string join(const std::vector<T>& items) {
    if (items.empty()) return "none";
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + text_of(item);
    return out;
}

bool covers(const Destination& granted, const Destination& asked) {
    bool host = granted.host == "*" || granted.host == asked.host ||
                (granted.host == "loopback" && (asked.host == "loopback" || is_loopback_host(asked.host)));
    return host && (granted.port == 0 || granted.port == asked.port);
}

}  // namespace

namespace {

bool network_entry(std::string_view entry) {
    return setting_key(entry, kSettingPlaceholder) || parse_destination(entry).has_value();
}
bool environment_entry(std::string_view entry) { return setting_key(entry, kSettingPlaceholder) || is_variable_name(entry); }

// Each list a permissions table holds, and what an entry of it must be.
struct PermissionList {
    const char* key;
    std::vector<std::string> Permissions::*list;
    bool (*accepts)(std::string_view entry);
    const char* expected;  // after "entry "X" "
};
const PermissionList kPermissionLists[] = {
    {"read", &Permissions::read, is_path_entry,
     "is not an absolute path or a placeholder ({data}, {setting:KEY}, {setting_folder:KEY})"},
    {"write", &Permissions::write, is_path_entry,
     "is not an absolute path or a placeholder ({data}, {setting:KEY}, {setting_folder:KEY})"},
    {"network", &Permissions::network, network_entry,
     "is not a destination: use \"any\", \"loopback\", \"loopback:PORT\", \"HOST:PORT\" (\"*\" for any host or port, PORT 1 "
     "to 65535) or \"{setting:KEY}\""},
    {"environment", &Permissions::environment, environment_entry,
     "is not a variable name (letters, digits, _) or \"{setting:KEY}\""},
};
constexpr const char* kProcessesKey = "processes";

}  // namespace

Result<Permissions> parse_permissions(const std::string& table_json, const std::string& where) {
    json table = json::parse(table_json, nullptr, false);
    std::vector<std::string> problems;  // all of them, one line each
    auto fail = [&](const std::string& field, const std::string& what) {
        problems.push_back(where + ": " + (field.empty() ? "permissions" : "permissions." + field) + " " + what);
    };
    auto refused = [&] {
        std::string all;
        for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
        return plugin_error(PluginFault::permissions_invalid, all);
    };
    if (!table.is_object()) {
        fail("", "must be a table such as { read = [\"{data}\"], network = [\"loopback:8080\"] }");
        return refused();
    }
    std::vector<std::string> keys;
    for (const PermissionList& l : kPermissionLists) keys.emplace_back(l.key);
    keys.emplace_back(kProcessesKey);
    Permissions out;
    for (const auto& item : table.items()) {
        const std::string& key = item.key();
        const json& value = item.value();
        if (key == kProcessesKey) {
            if (value.is_boolean())
                out.processes = value.get<bool>();
            else
                fail(key, "must be true or false (whether the plugin may start programs)");
            continue;
        }
        const auto* list = std::find_if(std::begin(kPermissionLists), std::end(kPermissionLists),
                                        [&](const PermissionList& l) { return key == l.key; });
        if (list == std::end(kPermissionLists)) {
            fail(key, "is not a permission" + spelling::did_you_mean(key, keys) + " (permissions: " + spelling::join_names(keys) +
                          ")");
            continue;
        }
        if (!value.is_array()) {
            fail(key, "must be an array of strings");
            continue;
        }
        for (const auto& element : value) {
            if (!element.is_string()) {
                fail(key, "must hold only strings (found " + element.dump() + ")");
                continue;
            }
            std::string entry = element.get<std::string>();
            if (list->accepts(entry))
                (out.*(list->list)).push_back(std::move(entry));
            else
                fail(key, "entry \"" + entry + "\" " + list->expected);
        }
    }
    if (!problems.empty()) return refused();
    return out;
}

std::vector<std::string> setting_names(const Permissions& permissions) {
    std::vector<std::string> names;
    for (const auto* list : {&permissions.read, &permissions.write, &permissions.network, &permissions.environment})
        for (const auto& entry : *list) {
            auto key = setting_key(entry, kSettingPlaceholder);
            if (!key) key = setting_key(entry, kSettingFolderPlaceholder);
            if (key) names.push_back(key->substr(0, key->find('.')));
        }
    return names;
}

Result<Grant> resolve(const Permissions& permissions, const PermissionContext& context) {
    json settings = json::parse(context.settings_json, nullptr, false);
    if (!settings.is_object()) settings = json::object();
    auto values_of = [&](const std::string& key) {
        std::vector<std::string> values;
        collect_field(settings, key, values);
        return values;
    };

    Grant grant;
    grant.processes = permissions.processes;
    std::string bad_path;
    auto add_paths = [&](const std::vector<std::string>& entries, std::vector<fs::path>& out) {
        for (const auto& entry : entries) {
            std::vector<fs::path> paths;
            if (entry.rfind(kDataPlaceholder, 0) == 0) {
                paths.push_back(context.data_dir.string() + entry.substr(kDataPlaceholder.size()));
            } else if (auto key = setting_key(entry, kSettingPlaceholder)) {
                for (const auto& v : values_of(*key)) paths.emplace_back(v);
            } else if (auto folder_key = setting_key(entry, kSettingFolderPlaceholder)) {
                for (const auto& v : values_of(*folder_key)) paths.push_back(fs::path(v).parent_path());
            } else {
                paths.emplace_back(entry);
            }
            for (auto& p : paths) {
                if (!p.is_absolute()) {
                    bad_path = "\"" + entry + "\" gives \"" + p.string() +
                               "\", which is not an absolute path (a setting named by it "
                               "should be declared format = \"path\")";
                    return;
                }
                out.push_back(lexical(p));
            }
        }
    };
    add_paths(permissions.read, grant.read);
    add_paths(permissions.write, grant.write);
    if (!bad_path.empty()) return plugin_error(PluginFault::permissions_invalid, "permissions: " + bad_path);
    if (auto settled = settle_links(grant.read, grant.write); !settled) return settled.error();
    for (const auto& entry : permissions.environment) {
        std::vector<std::string> names;
        if (auto key = setting_key(entry, kSettingPlaceholder))
            names = values_of(*key);
        else
            names.push_back(entry);
        for (auto& n : names)
            if (is_variable_name(n) &&
                std::find(grant.environment.begin(), grant.environment.end(), n) == grant.environment.end())
                grant.environment.push_back(std::move(n));
    }
    for (const auto& entry : permissions.network) {
        std::vector<Destination> found;
        if (auto key = setting_key(entry, kSettingPlaceholder)) {
            for (const auto& v : values_of(*key)) {
                auto d = destination_of(v);
                if (d) {
                    found.push_back(*d);
                    continue;
                }
                std::string message = "permissions.network \"" + entry + "\": setting '";
                message += *key + "' holds \"" + v + "\", which is neither an http(s) URL nor HOST:PORT";
                return plugin_error(PluginFault::permissions_invalid, message);
            }
        } else if (auto d = parse_destination(entry)) {
            found.push_back(*d);
        }
        for (auto& d : found)
            if (std::none_of(grant.network.begin(), grant.network.end(),
                             [&](const Destination& g) { return g.host == d.host && g.port == d.port; }))
                grant.network.push_back(std::move(d));
    }
    return grant;
}

std::vector<std::string> exceeding(const Grant& asked, const Grant& granted) {
    std::vector<std::string> out;
    auto within = [](const fs::path& p, const std::vector<fs::path>& folders) {
        return std::any_of(folders.begin(), folders.end(), [&](const fs::path& f) { return under(p, f); });
    };
    std::vector<fs::path> readable = granted.read;
    readable.insert(readable.end(), granted.write.begin(), granted.write.end());
    for (const auto& p : asked.read)
        if (!within(p, readable)) out.push_back("read " + p.string() + " (granted: " + join(readable) + ")");
    for (const auto& p : asked.write)
        if (!within(p, granted.write)) out.push_back("write " + p.string() + " (granted: " + join(granted.write) + ")");
    for (const auto& d : asked.network)
        if (std::none_of(granted.network.begin(), granted.network.end(), [&](const Destination& g) { return covers(g, d); }))
            out.push_back("connect to " + describe(d) + " (granted: " + join(granted.network) + ")");
    for (const auto& v : asked.environment)
        if (std::find(granted.environment.begin(), granted.environment.end(), v) == granted.environment.end())
            out.push_back("read the environment variable " + v + " (granted: " + join(granted.environment) + ")");
    if (asked.processes && !granted.processes) out.push_back("start programs (granted: processes = false)");
    return out;
}

bool is_loopback_host(std::string_view host) {
    std::string h = lower(host);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    if (h == "localhost" || (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0)) return true;
    unsigned char address[16];
    if (inet_pton(AF_INET, h.c_str(), address) == 1) return address[0] == 127;
    if (inet_pton(AF_INET6, h.c_str(), address) == 1) {
        static const unsigned char loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        return std::equal(address, address + 16, loop6) || (std::equal(address, address + 12, mapped) && address[12] == 127);
    }
    return false;
}

bool allows_connect(const Grant& grant, std::string_view host, int port) {
    std::string h = lower(host);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    Destination asked{h, port};
    return std::any_of(grant.network.begin(), grant.network.end(), [&](const Destination& g) { return covers(g, asked); });
}

std::string describe(const Destination& d) {
    if (d.host == "*" && d.port == 0) return "any";
    if (d.host == "loopback" && d.port == 0) return "loopback";
    std::string host = d.host.find(':') != std::string::npos ? "[" + d.host + "]" : d.host;
    return host + ":" + (d.port == 0 ? std::string("*") : std::to_string(d.port));
}

std::string describe_network(const Grant& grant) { return join(grant.network); }

std::vector<std::string> describe(const Grant& grant) {
    return {"read: " + join(grant.read), "write: " + join(grant.write), "network: " + join(grant.network),
            "environment: " + join(grant.environment), std::string("processes: ") + (grant.processes ? "yes" : "no")};
}

}  // namespace agenthost::plugins
