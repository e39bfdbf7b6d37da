// A graph written out: export formats (json, graphml, mermaid, dot) and the Markdown vault mirror
// (one note per concept with front matter and [[wikilinks]], one index note per graph), which a
// person may edit and reindex() reads back.
#pragma once

#include "graph_db.hpp"

#include <filesystem>
#include <set>
#include <string>

namespace graph {

// The edges of graph `g.id` (in a query over graphs g): those with either end in it, as
// graph_document lists them. The one count of a graph's edges, wherever it is shown.
inline constexpr const char* kEdgesOfGraph =
    "SELECT COUNT(*) FROM edges e JOIN instances si ON si.id = e.source JOIN instances ti ON ti.id = e.target"
    " WHERE si.graph_id = g.id OR ti.graph_id = g.id";

// The graph as one JSON document: nodes (instances), edges (with either end in it), frames,
// storylines, and the nodes of other graphs its edges reach (external_nodes).
json graph_document(GraphDb& db, int64_t graph_id);
// "json" | "graphml" | "mermaid" | "dot"; empty when the format is unknown.
std::string export_graph(GraphDb& db, int64_t graph_id, const std::string& format);

class Vault {
public:
    explicit Vault(std::filesystem::path dir) : dir_(std::move(dir)) {}
    // Rewrites the notes of these concepts and every graph's index note, and deletes the notes of
    // concepts that were removed (by name).
    void write(GraphDb& db, const std::set<int64_t>& concepts, const std::set<std::string>& removed = {});
    void write_all(GraphDb& db);
    // Reads the notes back: changed descriptions, types and colours, new concepts, new links.
    // Returns what changed as {"updated", "created", "linked"} counts.
    json reindex(GraphDb& db);
    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path dir_;
};

// A file name for a note: the name without characters file systems or Obsidian refuse, and never
// one that reads as a graph's index ("Graph - X" → "Concept - Graph - X").
std::string note_name(const std::string& name);

}  // namespace graph
