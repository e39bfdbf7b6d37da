// The secrets file named by `secrets_file` in agenthost.toml: KEY=VALUE lines, as systemd's
// EnvironmentFile= reads them, so the service's unit and the CLI share one file. A command run by
// root (sudo) reads it before acting as the data dir's owner, so `sudo agenthost run …` has the
// same secrets as the service without the file being readable by the service user.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::config {

using Variables = std::vector<std::pair<std::string, std::string>>;

// The variables of `text` (the file's contents; `name` for errors): `KEY=VALUE` lines, with an
// optional `export ` before the key, the value optionally in single or double quotes, blank lines
// and lines starting with '#' or ';' skipped. Lines that are none of those are an error naming
// each one's file:line and the fix, all of them at once (one per line of the message).
Result<Variables> parse_secrets(std::string_view text, const std::string& name);

// What loading the file did, for doctor: the names it set (never the values), or why nothing.
struct SecretsLoad {
    std::vector<std::string> set;   // names taken from the file
    std::vector<std::string> kept;  // names already in the environment (the environment wins)
    std::string unreadable;         // set when the file is missing or this user cannot read it
};

// Reads `file` and puts each of its variables not already set into this process's environment.
// Called once, by main, before any thread starts and before plugins load. A syntax error is an
// error; a file that is missing or unreadable is not (a service user reads its secrets from its
// unit's EnvironmentFile=), and is said in `unreadable`.
Result<SecretsLoad> export_secrets(const std::filesystem::path& file);

}  // namespace agenthost::config
