#include "format.hpp"

#include <cstdio>
#include <map>

namespace torrent {

std::string human_size(int64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes < 0 ? 0 : bytes);
    int unit = 0;
    while (value >= 1024 && unit < 5) {
        value /= 1024;
        ++unit;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buf;
}

std::string human_speed(int64_t bytes_per_second) { return human_size(bytes_per_second) + "/s"; }

std::string human_eta(int64_t s) {
    if (s < 0 || s >= 8640000) return "unknown";
    if (s < 60) return std::to_string(s) + " s";
    if (s < 3600) return std::to_string(s / 60) + " min";
    if (s < 86400) return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
    return std::to_string(s / 86400) + " d " + std::to_string(s % 86400 / 3600) + " h";
}

std::string human_state(const std::string& state) {
    static const std::map<std::string, std::string> names{{"downloading", "downloading"},
                                                          {"forcedDL", "downloading (forced)"},
                                                          {"metaDL", "fetching metadata"},
                                                          {"forcedMetaDL", "fetching metadata"},
                                                          {"stalledDL", "stalled (no peers)"},
                                                          {"pausedDL", "paused"},
                                                          {"stoppedDL", "paused"},
                                                          {"queuedDL", "queued"},
                                                          {"checkingDL", "checking"},
                                                          {"checkingUP", "checking"},
                                                          {"checkingResumeData", "checking"},
                                                          {"allocating", "allocating space"},
                                                          {"uploading", "seeding"},
                                                          {"forcedUP", "seeding (forced)"},
                                                          {"stalledUP", "seeding (idle)"},
                                                          {"pausedUP", "completed (paused)"},
                                                          {"stoppedUP", "completed (paused)"},
                                                          {"queuedUP", "completed (queued)"},
                                                          {"error", "error"},
                                                          {"missingFiles", "files missing"},
                                                          {"moving", "moving"},
                                                          {"unknown", "unknown"}};
    auto it = names.find(state);
    return it == names.end() ? state : it->second;
}

bool complete_state(const std::string& state) {
    return state == "uploading" || state == "forcedUP" || state == "stalledUP" || state == "pausedUP" || state == "stoppedUP" ||
           state == "queuedUP";
}

}  // namespace torrent
