// Where AWS credentials come from, in the order the AWS SDKs look: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then a profile of the shared
// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials; the profile named by the
// plugin's setting, else AWS_PROFILE, else "default"). Read on every request, so keys rotated by
// a credentials helper are picked up without a restart.
#pragma once

#include "sigv4.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

namespace agenthost::providers::aws {

struct FoundCredentials {
    Credentials credentials;
    std::string source;   // where they came from, for doctor ("the environment", "profile dev in /home/…")
    std::string problem;  // why none were found, naming what was looked at
};

inline std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

namespace detail {

inline std::string strip(std::string s) {
    const char* space = " \t\r\n";
    s.erase(0, s.find_first_not_of(space));
    s.erase(s.find_last_not_of(space) + 1);
    return s;
}

// One [profile]'s aws_access_key_id, aws_secret_access_key and aws_session_token from an INI file.
inline bool read_profile(const std::string& path, const std::string& profile, Credentials& out) {
    std::ifstream in(path);
    if (!in) return false;
    std::string line;
    bool inside = false, seen = false;
    while (std::getline(in, line)) {
        line = strip(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            inside = strip(line.substr(1, line.size() - 2)) == profile;
            seen = seen || inside;
            continue;
        }
        if (!inside) continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = strip(line.substr(0, eq)), value = strip(line.substr(eq + 1));
        if (key == "aws_access_key_id") out.access_key_id = value;
        if (key == "aws_secret_access_key") out.secret_access_key = value;
        if (key == "aws_session_token") out.session_token = value;
    }
    return seen;
}

}  // namespace detail

inline FoundCredentials find_credentials(const std::string& profile_setting, const std::string& file_setting) {
    FoundCredentials found;
    Credentials from_env{environment("AWS_ACCESS_KEY_ID"), environment("AWS_SECRET_ACCESS_KEY"),
                         environment("AWS_SESSION_TOKEN")};
    if (from_env.usable()) {
        found.credentials = from_env;
        found.source = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";
        return found;
    }
    std::string file = file_setting;
    if (file.empty()) file = environment("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty() && !environment("HOME").empty()) file = environment("HOME") + "/.aws/credentials";
    std::string profile = profile_setting;
    if (profile.empty()) profile = environment("AWS_PROFILE");
    if (profile.empty()) profile = "default";
    Credentials from_file;
    const bool has_profile = !file.empty() && detail::read_profile(file, profile, from_file);
    if (has_profile && from_file.usable()) {
        found.credentials = from_file;
        found.source = "profile " + profile + " in " + file;
        return found;
    }
    found.problem =
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for "
        "temporary ones), or put aws_access_key_id and aws_secret_access_key in profile " +
        profile + " of " + (file.empty() ? std::string("~/.aws/credentials") : file) +
        (has_profile ? " (the profile is there, without both keys)" : "") +
        ", or export AWS_BEARER_TOKEN_BEDROCK with a Bedrock API key";
    return found;
}

}  // namespace agenthost::providers::aws
