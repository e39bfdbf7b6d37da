// Which graph a name or a conversation means. A name is matched exactly (any case), then fuzzily;
// a phrase from a message may also name part of a graph ("the roster graph" for "Chiefs Roster").
// The active graph belongs to a conversation (its memory key "active_graph"); the plugin's own
// setting holds the last switch anywhere, the default a conversation starts from (and then keeps:
// it is written to the conversation's memory when first used).
#pragma once

#include "graph_db.hpp"

#include <agenthost/plugin.hpp>

#include <optional>
#include <string>

namespace graph {

struct GraphRef {
    int64_t id = 0;
    std::string name;
};

class Graphs {
public:
    Graphs(GraphDb& db, agenthost::sdk::Host host, double threshold) : db_(db), host_(host), threshold_(threshold) {}

    // By name as said: case and accents aside (exact_form), whatever words it is made of.
    std::optional<GraphRef> exactly_named(const std::string& name);
    // By name: exactly_named(), then the most similar at the dedup threshold.
    std::optional<GraphRef> named(const std::string& name);
    // A phrase from a message: exactly_named(); else, unless it is only filler words, named(), else
    // the one graph whose name holds every word of the phrase that is not filler ("the roster" →
    // "Chiefs Roster"); nullopt when none or several do.
    std::optional<GraphRef> loosely_named(const std::string& phrase);
    // `name`, or the conversation's active graph for an empty name; `error` says why there is none.
    std::optional<GraphRef> resolve(const std::string& name, std::string_view conversation, std::string& error);

    std::optional<GraphRef> active(std::string_view conversation);
    void set_active(std::string_view conversation, const GraphRef& graph);
    // The conversation's recently used graphs, most recent last (at most five).
    void remember(std::string_view conversation, const std::string& name);
    std::vector<std::string> recent(std::string_view conversation);

    std::string names();  // "A, B, C" or "none yet", for messages

private:
    std::optional<GraphRef> by_id(int64_t id);

    GraphDb& db_;
    agenthost::sdk::Host host_;
    double threshold_;
};

}  // namespace graph
