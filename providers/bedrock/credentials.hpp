// Where AWS credentials come from, in the order the AWS SDKs look: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then a profile of the shared
// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials; the profile named by the
// plugin's setting, else AWS_PROFILE, else "default"). Read on every request, so keys rotated by
// a credentials helper are picked up without a restart.
#pragma once

#include "sigv4.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

// What one shared credentials file holds for one profile.
struct ProfileRead {
    int open_error = 0;    // errno when the file could not be opened
    bool found = false;    // the [profile] section is there
    std::string profiles;  // the sections there, for the message
    Credentials credentials;
};

// aws_access_key_id, aws_secret_access_key and aws_session_token of one [profile] of an INI file.
inline ProfileRead read_profile(const std::string& path, const std::string& profile) {
    ProfileRead read;
    errno = 0;
    std::ifstream in(path);
    if (!in) {
        read.open_error = errno ? errno : ENOENT;
        return read;
    }
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        line = strip(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            const std::string name = strip(line.substr(1, line.size() - 2));
            read.profiles += (read.profiles.empty() ? "" : ", ") + name;
            inside = name == profile;
            read.found = read.found || inside;
            continue;
        }
        if (!inside) continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = strip(line.substr(0, eq)), value = strip(line.substr(eq + 1));
        if (key == "aws_access_key_id") read.credentials.access_key_id = value;
        if (key == "aws_secret_access_key") read.credentials.secret_access_key = value;
        if (key == "aws_session_token") read.credentials.session_token = value;
    }
    return read;
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
    if (from_env.access_key_id.empty() != from_env.secret_access_key.empty()) {
        found.problem = from_env.access_key_id.empty() ? "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not: export both"
                                                       : "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: export both";
        return found;
    }
    std::string file = file_setting;
    if (file.empty()) file = environment("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty() && !environment("HOME").empty()) file = environment("HOME") + "/.aws/credentials";
    std::string profile = profile_setting;
    if (profile.empty()) profile = environment("AWS_PROFILE");
    if (profile.empty()) profile = "default";
    detail::ProfileRead read;
    if (file.empty())
        read.open_error = ENOENT;
    else
        read = detail::read_profile(file, profile);
    if (read.found && read.credentials.usable()) {
        found.credentials = read.credentials;
        found.source = "profile " + profile + " in " + file;
        return found;
    }
    const std::string shown = file.empty() ? std::string("~/.aws/credentials") : file;
    std::string why;
    if (read.open_error == ENOENT)
        why = shown + " does not exist";
    else if (read.open_error != 0)
        why = shown + " cannot be read (" + std::strerror(read.open_error) +
              "; a sandboxed plugin reads only the file [plugins.bedrock] credentials_file names)";
    else if (!read.found)
        why = "profile " + profile + " is not in " + shown + " (" +
              (read.profiles.empty() ? std::string("it has none") : "it has " + read.profiles) + ")";
    else
        why = "profile " + profile + " of " + shown + " is there, without both aws_access_key_id and aws_secret_access_key";
    found.problem = "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and " + why +
                    ". Export the keys (AWS_SESSION_TOKEN too for temporary ones), put them in the profile, or export "
                    "AWS_BEARER_TOKEN_BEDROCK with a Bedrock API key. A profile of ~/.aws/config (single sign-on, "
                    "credential_process, a role) is not read: `aws configure export-credentials --profile " +
                    profile + " --format env` prints its keys";
    return found;
}

}  // namespace agenthost::providers::aws
