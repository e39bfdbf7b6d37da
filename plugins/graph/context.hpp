// The graph plugin's context hook: what the model is told about graphs before it answers. The
// active graph in brief (or the nodes the user selected, with descriptions and edges), what the
// message's @mentions name (graphs with counts and sample nodes, nodes, connection types), and a
// switch of the active graph when the message names one ("open the Chiefs Roster graph").
#pragma once

#include "graph_db.hpp"
#include "graphs.hpp"

#include <agenthost/plugin.hpp>

#include <string>

namespace graph {

struct ContextLimits {
    int nodes = 40;             // names listed for the active graph
    size_t selected = 20;       // selected nodes described
    size_t edges_per_node = 8;  // edges listed per selected node
    size_t description = 240;   // bytes of a description shown
    double match_threshold = 0.86;
};

// The text for the model. A refresh (request context "context_refresh": true, sent by the host
// after a change within a turn) re-reads the graphs but never switches the active graph again.
std::string model_context(GraphDb& db, Graphs& graphs, const agenthost::sdk::Call& call, const ContextLimits& limits);

}  // namespace graph
