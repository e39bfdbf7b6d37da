#include "config/secrets_file.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace agenthost::config {

namespace {

bool valid_name(std::string_view key) {
    if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
    for (char ch : key)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace

Result<Variables> parse_secrets(std::string_view text, const std::string& name) {
    Variables out;
    std::string problems;  // every bad line, one per line of the error
    auto fail = [&](const std::string& problem) { problems += (problems.empty() ? "" : "\n") + problem; };
    size_t line_no = 0;
    while (!text.empty()) {
        size_t end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++line_no;
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        if (line.substr(0, 7) == "export ") line = trim(line.substr(7));
        size_t eq = line.find('=');
        std::string where = name + ":" + std::to_string(line_no) + ": ";
        if (eq == std::string_view::npos) {
            fail(where + "expected NAME=value (the line is not shown: it may hold a secret)");
            continue;
        }
        std::string_view key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
        if (!valid_name(key)) {
            fail(where + "'" + std::string(key.substr(0, 40)) +
                 "' is not a variable name: use letters, digits and '_', not starting with a digit");
            continue;
        }
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        out.emplace_back(std::string(key), std::string(value));
    }
    if (!problems.empty()) return Error{"secrets_syntax", problems};
    return out;
}

Result<SecretsLoad> export_secrets(const std::filesystem::path& file) {
    SecretsLoad load;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        int err = errno;
        load.unreadable =
            file.string() +
            (err == ENOENT ? " does not exist" : " cannot be read by this user (" + std::string(std::strerror(err)) + ")") +
            "; its variables come from the environment only";
        return load;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto vars = parse_secrets(text.str(), file.string());
    if (!vars) return vars.error();
    for (auto& [key, value] : *vars) {
        if (std::getenv(key.c_str())) {
            load.kept.push_back(key);
            continue;
        }
        ::setenv(key.c_str(), value.c_str(), 0);
        load.set.push_back(key);
    }
    return load;
}

}  // namespace agenthost::config
