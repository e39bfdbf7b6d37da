// apply_graph_spec in three stages. The model sends only semantics (names, descriptions, types,
// connections); the executor turns them into operations (dedup against what exists, normalised
// connection types, colours, positions), the auditor checks them, the committer applies them.
#pragma once

#include "graph_db.hpp"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace graph {

struct SpecSettings {
    double dedup_threshold = 0.86;  // similarity at which a name is the same concept
    size_t max_nodes = 5000;        // per batch
    size_t max_edges = 20000;
    size_t max_name = 200;
    bool allow_self_edges = false;
    std::vector<std::string> palette{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
};

// What the executor decided: operations (with "ref" names for rows not created yet) and a summary.
struct Plan {
    int64_t graph_id = 0;
    std::string graph_name;
    json ops = json::array();
    json created = json::array(), reused = json::array(), linked = json::array(), skipped = json::array();
    json kept_apart = json::array();           // new nodes close to an existing one but another thing, and why
    std::vector<std::string> problems;         // unresolvable references, found while planning
    std::map<std::string, std::string> names;  // key ("r0", "c12") → the node's name, for messages
};

// Executor. An error string when the spec cannot even be planned (no graph, invented graph).
Plan execute(GraphDb& db, const json& spec, int64_t active_graph, const SpecSettings& settings, std::string& error);
// Auditor: every violation, each one line; empty when the plan may be applied.
std::vector<std::string> audit(const Plan& plan, const SpecSettings& settings);
// Committer: applies the plan in one change, records the batch for undo; returns the summary.
json commit(GraphDb& db, const Plan& plan);

// Where new instances go: near what they connect to, never on top of another (deterministic).
struct Placer {
    explicit Placer(GraphDb& db, int64_t graph_id);
    std::pair<double, double> place(const std::vector<std::pair<double, double>>& anchors);

private:
    bool free(double x, double y) const;
    std::vector<std::pair<double, double>> taken_;
    std::unordered_map<int64_t, std::vector<size_t>> grid_;  // cells of kSpacing → indexes into taken_
};

constexpr double kSpacing = 140;  // minimum distance between two instances

}  // namespace graph
