// Who may use a data dir. The packaged service owns /var/lib/agenthost (user agenthost); a command
// run as root against it would leave root-owned files the service can then not open. Root acts as
// the data dir's owner instead, as `sudo -u agenthost` would, and any other user who cannot open
// it is told whose it is.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <string>

namespace agenthost::app {

// Run as root on a data dir another user owns: become that user (its groups, gid and uid) before
// anything is opened, so every file made there is the owner's. Nothing to do otherwise (not root,
// the dir root's own, or not there yet). An error when the switch fails.
Status act_as_data_dir_owner(const std::filesystem::path& data_dir);

// When this user is not the data dir's owner: " (data_dir D belongs to USER; run the command as
// it: sudo -u USER agenthost …)"; empty otherwise. Appended to "cannot open the database".
std::string data_dir_owner_hint(const std::filesystem::path& data_dir);

}  // namespace agenthost::app
