// What a plugin may touch, in one place: declared in its plugin.toml ([permissions]), capped by the
// operator ([plugins.NAME] permissions = { … }), enforced by the kernel when the plugin runs with
// isolation = "sandbox" (isolation/sandbox) and, for every plugin that declares them, by the host's
// HTTP service. docs/plugin-abi.md, "Permissions", is the user's description of the same rules.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::plugins {

// The [permissions] table as written, placeholders unresolved. Paths are absolute or a placeholder:
//   {data}                   the plugin's own data folder (data_dir/plugins/NAME)
//   {setting:KEY}            the path(s) in setting KEY (a string, an array, a table's values);
//                            KEY.FIELD takes FIELD of each element ({setting:indexers.url})
//   {setting_folder:KEY}     the folder holding the file(s) named by setting KEY
// Network entries: "any", "loopback", "loopback:PORT", "HOST:PORT" ("*" for any host or port), or
// {setting:KEY} naming URLs or HOST:PORT values. Environment entries: variable names, or
// {setting:KEY} naming them (a sandboxed plugin sees only these and the locale, PATH, HOME, TZ).
struct Permissions {
    std::vector<std::string> read;
    std::vector<std::string> write;  // implies read
    std::vector<std::string> network;
    std::vector<std::string> environment;
    bool processes = false;  // may start programs (fork + exec)
};

// Where a plugin may connect. host is lowercase, "*" for any, "loopback" for 127.0.0.0/8, ::1 and
// localhost; port 0 for any.
struct Destination {
    std::string host;
    int port = 0;
};

// Permissions with placeholders resolved against one plugin's data folder and settings.
struct Grant {
    std::vector<std::filesystem::path> read;
    std::vector<std::filesystem::path> write;
    std::vector<Destination> network;
    std::vector<std::string> environment;  // variable names
    bool processes = false;
};

// The values a placeholder can name.
struct PermissionContext {
    std::filesystem::path data_dir;    // the plugin's data folder
    std::string settings_json = "{}";  // the plugin's effective settings
};

// Reads a [permissions] table given as JSON. Every mistake is reported at once, one per line of
// the error, each saying which field, what was found and the form expected; `where` prefixes them (a file and line, or
// "[plugins.NAME] permissions").
Result<Permissions> parse_permissions(const std::string& table_json, const std::string& where);

// The settings its placeholders name ({setting:indexers.url} → "indexers"), for the manifest's check
// that each is declared.
std::vector<std::string> setting_names(const Permissions& permissions);

// Placeholders resolved; paths made absolute and normal, duplicates dropped. An unset or empty
// setting grants nothing; a value that is not an absolute path (for files) or a URL or HOST:PORT
// (for the network) is refused, naming the setting and the value.
Result<Grant> resolve(const Permissions& permissions, const PermissionContext& context);

// What `asked` wants beyond `granted`, one phrase per difference ("write /srv (granted: /data)");
// empty when every path, destination and right asked for is covered.
std::vector<std::string> exceeding(const Grant& asked, const Grant& granted);

// Whether a grant allows connecting to host:port (host as in a URL, without brackets).
bool allows_connect(const Grant& grant, std::string_view host, int port);
bool is_loopback_host(std::string_view host);

// "HOST:PORT" as the operator writes it ("any", "loopback:8080", "*:443" …).
std::string describe(const Destination& destination);
// One line per kind for reports: "read: /a, /b", "write: none", "network: 127.0.0.1:8080",
// "environment: QBITTORRENT_PASSWORD", "processes: no".
std::vector<std::string> describe(const Grant& grant);
// The destinations alone ("127.0.0.1:8080, api.example.com:443", or "none").
std::string describe_network(const Grant& grant);

}  // namespace agenthost::plugins
