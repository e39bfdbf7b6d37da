#include "plugins/manifest_cache.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace agenthost::plugins {
namespace {

namespace fs = std::filesystem;

// Larger than any real cache (a manifest is a few kilobytes): a bigger file is not the host's.
constexpr size_t kMaxCacheBytes = size_t{4} << 20;

// This build of the host: a manifest checked by another build may not pass this one's checks.
// "" when it cannot be told (nothing is kept then).
std::string host_identity() {
    struct stat st {};
    if (::stat("/proc/self/exe", &st) != 0) return {};
    return std::string(AGENTHOST_VERSION) + "/" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// Which text a manifest is: its length and a hash of its bytes. A file's times are not enough: an
// edit within the same clock tick leaves them as they were.
std::string text_identity(std::string_view text) {
    return std::to_string(text.size()) + ":" + std::to_string(std::hash<std::string_view>{}(text));
}

// The file's first line: a file without it is not one this host wrote.
constexpr std::string_view kFormat = "agenthost plugin manifests 1\n";

// Values as netstrings ("6:A demo,"): read back by length, without a parser.
void put(std::string& out, std::string_view value) {
    out.append(std::to_string(value.size())).append(":").append(value).append(",");
}
void put_list(std::string& out, const std::vector<std::string>& list) {
    put(out, std::to_string(list.size()));
    for (const auto& item : list) put(out, item);
}

// Reads netstrings from the cache's text; every read after a malformed one fails.
class Netstrings {
public:
    explicit Netstrings(std::string_view text) : rest_(text) {}
    std::optional<std::string_view> next() {
        const size_t colon = rest_.find(':');
        auto length = colon == std::string_view::npos ? std::nullopt : digits(rest_.substr(0, colon));
        if (!length || rest_.size() < colon + 1 + *length + 1 || rest_[colon + 1 + *length] != ',') return fail();
        std::string_view value = rest_.substr(colon + 1, *length);
        rest_.remove_prefix(colon + 1 + *length + 1);
        return value;
    }
    std::optional<int> number() {
        auto text = next();
        auto value = text ? digits(*text) : std::nullopt;
        if (!value) return std::nullopt;
        return static_cast<int>(*value);
    }
    bool list(std::vector<std::string>& out) {
        auto count = number();
        if (!count) return false;
        for (int i = 0; i < *count; ++i) {
            auto item = next();
            if (!item) return false;
            out.emplace_back(*item);
        }
        return true;
    }
    bool done() const { return rest_.empty(); }
    std::string_view rest() const { return rest_; }

private:
    // 1 to 9 decimal digits and nothing else.
    static std::optional<size_t> digits(std::string_view text) {
        size_t value = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || text.size() > 9 || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
        return value;
    }
    std::optional<std::string_view> fail() {
        rest_ = {};
        return std::nullopt;
    }
    std::string_view rest_;
};

void put_manifest(std::string& out, const Manifest& m) {
    for (std::string_view field :
         {std::string_view(m.name), name(m.kind), std::string_view(m.library.native()), std::string_view(m.version),
          std::string_view(m.description), std::string_view(m.default_config_json), std::string_view(m.settings_schema_json)})
        put(out, field);
    put(out, std::to_string(m.abi_major));
    put(out, std::to_string(m.abi_minor));
    put(out, m.permissions ? "1" : "0");
    if (!m.permissions) return;
    put(out, m.permissions->processes ? "1" : "0");
    for (const auto* list : {&m.permissions->read, &m.permissions->write, &m.permissions->network, &m.permissions->environment})
        put_list(out, *list);
}

// The manifest put_manifest wrote; nullopt when the text is not that.
std::optional<Manifest> take_manifest(Netstrings& in, const fs::path& file) {
    Manifest m;
    m.file = file;
    std::string kind, library;
    for (std::string* field :
         {&m.name, &kind, &library, &m.version, &m.description, &m.default_config_json, &m.settings_schema_json}) {
        auto value = in.next();
        if (!value) return std::nullopt;
        field->assign(*value);
    }
    auto parsed_kind = parse_plugin_kind(kind);
    auto major = in.number(), minor = in.number(), has_permissions = in.number();
    if (!parsed_kind || !major || !minor || !has_permissions || m.name.empty() || library.empty()) return std::nullopt;
    m.kind = *parsed_kind;
    m.library = library;
    m.abi_major = *major;
    m.abi_minor = *minor;
    if (*has_permissions == 0) return m;
    Permissions p;
    auto processes = in.number();
    if (!processes || !in.list(p.read) || !in.list(p.write) || !in.list(p.network) || !in.list(p.environment))
        return std::nullopt;
    p.processes = *processes == 1;
    m.permissions = std::move(p);
    return m;
}

}  // namespace

ManifestCache::ManifestCache(fs::path file) : file_(std::move(file)), host_(host_identity()) {
    if (file_.empty() || host_.empty()) return;
    std::error_code ec;
    const uintmax_t size = fs::file_size(file_, ec);
    if (ec || size > kMaxCacheBytes) return;
    std::ifstream in(file_, std::ios::binary);
    std::string text(static_cast<size_t>(size), '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) return;
    if (text.rfind(kFormat, 0) != 0) return;  // not the host's
    Netstrings values(std::string_view(text).substr(kFormat.size()));
    if (values.next() != host_) return;  // another build's: read every manifest again
    // The entries as the host wrote them, or none: a file edited by hand or cut short is not used.
    if (auto sum = values.next(); !sum || *sum != text_identity(values.rest())) return;
    std::map<std::string, Entry> entries;
    while (!values.done()) {
        auto path = values.next(), identity = values.next();
        if (!path || !identity) return;
        auto manifest = take_manifest(values, *path);
        if (!manifest) return;
        entries.insert_or_assign(std::string(*path), Entry{std::string(*identity), std::move(*manifest)});
    }
    entries_ = std::move(entries);
}

Result<Manifest> ManifestCache::read(const fs::path& manifest_file) {
    auto text = read_manifest_text(manifest_file);
    if (!text) return text.error();
    const std::string key = manifest_file.string();
    const std::string identity = text_identity(*text);
    if (auto kept = entries_.find(key); kept != entries_.end() && kept->second.identity == identity) {
        ++from_cache_;
        return kept->second.manifest;
    }
    auto manifest = parse_manifest(*text, manifest_file);
    if (manifest && !host_.empty()) {
        entries_.insert_or_assign(key, Entry{identity, *manifest});
        changed_ = true;
    } else if (entries_.erase(key) > 0) {
        changed_ = true;
    }
    return manifest;
}

void ManifestCache::save() {
    if (!changed_ || file_.empty() || host_.empty()) return;
    std::string entries;
    for (const auto& [path, entry] : entries_) {
        put(entries, path);
        put(entries, entry.identity);
        put_manifest(entries, entry.manifest);
    }
    std::string text(kFormat);
    put(text, host_);
    put(text, text_identity(entries));
    text += entries;
    fs::path fresh = file_;
    fresh += ".new-" + std::to_string(::getpid());
    std::error_code ec;
    {
        std::ofstream out(fresh, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush()) ec = std::make_error_code(std::errc::io_error);
    }
    if (!ec) fs::rename(fresh, file_, ec);
    if (ec) {
        spdlog::debug("plugin manifests not kept for the next start: file={} error={}", file_.string(), ec.message());
        fs::remove(fresh, ec);
        return;
    }
    changed_ = false;
}

}  // namespace agenthost::plugins
