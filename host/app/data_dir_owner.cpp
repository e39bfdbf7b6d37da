#include "app/data_dir_owner.hpp"

#include <cerrno>
#include <cstring>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <vector>

namespace agenthost::app {
namespace {

struct Owner {
    uid_t uid;
    gid_t gid;
    std::string name;
};

std::optional<Owner> owner_of(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
    Owner owner{st.st_uid, st.st_gid, std::to_string(st.st_uid)};
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    if (::getpwuid_r(st.st_uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found) {
        owner.name = found->pw_name;
        owner.gid = found->pw_gid;  // the user's own group, as a login would have
    }
    return owner;
}

}  // namespace

Status act_as_data_dir_owner(const std::filesystem::path& data_dir) {
    if (::geteuid() != 0) return Ok{};
    auto owner = owner_of(data_dir);
    if (!owner || owner->uid == 0) return Ok{};
    if (::initgroups(owner->name.c_str(), owner->gid) != 0 || ::setgid(owner->gid) != 0 || ::setuid(owner->uid) != 0)
        return Error{"data_dir_owner", "data_dir " + data_dir.string() + " belongs to " + owner->name +
                                           ", and acting as that user failed (" + std::strerror(errno) +
                                           "); run the command as it: sudo -u " + owner->name + " agenthost …"};
    return Ok{};
}

std::string data_dir_owner_hint(const std::filesystem::path& data_dir) {
    auto owner = owner_of(data_dir);
    if (!owner || owner->uid == ::geteuid()) return "";
    return " (data_dir " + data_dir.string() + " belongs to " + owner->name + "; run the command as it: sudo -u " + owner->name +
           " agenthost …)";
}

}  // namespace agenthost::app
