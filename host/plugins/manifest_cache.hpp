// Checked manifests kept between starts (data_dir/plugin-manifests): a start reads one small
// file and a stat per plugin.toml instead of parsing and checking every manifest again (about a
// third of a millisecond each, most of a start with a dozen plugins).
//
// An entry is used only while its plugin.toml holds the same text (its length and a hash of its
// bytes: still a read, but no parse) and the host is the same build (its executable's size and
// time): an edited manifest, or a host that checks manifests differently, reads it again. A manifest with a problem
// is never kept, so its error is shown at every start. The file is the host's own, checked against
// a sum of its entries: one that cannot be read, or that a person edited or damaged, is an empty
// cache, never an error.
#pragma once

#include "plugins/manifest.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace agenthost::plugins {

class ManifestCache {
public:
    // The cache kept in `file`; an empty path keeps nothing between starts.
    explicit ManifestCache(std::filesystem::path file);

    // The manifest, from the cache when its entry still stands, else read (read_manifest) and kept.
    Result<Manifest> read(const std::filesystem::path& manifest_file);
    // Writes the cache back when a manifest was read from its file (a new file beside, renamed over
    // it). A failure is logged and changes nothing else: the next start reads the manifests again.
    void save();
    // How many read() calls the cache answered.
    size_t from_cache() const { return from_cache_; }

private:
    struct Entry {
        std::string identity;  // of the plugin.toml's text
        Manifest manifest;
    };
    std::filesystem::path file_;
    std::string host_;                      // this build's identity
    std::map<std::string, Entry> entries_;  // by plugin.toml path
    bool changed_ = false;
    size_t from_cache_ = 0;
};

}  // namespace agenthost::plugins
