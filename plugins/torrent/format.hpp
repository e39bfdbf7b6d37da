// Numbers and states as a person reads them: "1.4 GiB", "2.1 MiB/s", "5 min", "seeding".
#pragma once

#include <cstdint>
#include <string>

namespace torrent {

std::string human_size(int64_t bytes);
std::string human_speed(int64_t bytes_per_second);
std::string human_eta(int64_t seconds);  // qBittorrent's 8640000 means "unknown"
std::string human_state(const std::string& qbt_state);
// True for the states of a torrent whose data is complete (seeding, paused after completion …).
bool complete_state(const std::string& qbt_state);

}  // namespace torrent
