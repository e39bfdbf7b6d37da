// What a user's message names, read as text: "@Name" mentions and the phrases that name a graph
// ("open the Chiefs Roster graph", "switch to the swift kelce network", "add Pluto to the Solar
// System graph"). Only candidates: the plugin decides which of them name a graph, a node or a
// connection type.
#pragma once

#include <string>
#include <vector>

namespace graph {

// The words a reference may be made of, longest first: "Tony Stark in the DC" →
// {"Tony Stark in the DC", …, "Tony Stark", "Tony"}. The first candidate that resolves wins.
struct Reference {
    std::vector<std::string> candidates;  // longest first, never empty
    bool asks_to_switch = false;          // "open", "switch to", "use", "select", "go to" before it
    bool says_graph = false;              // ends in "graph" / "network": part of a name may do
    std::string spoken;                   // the name as said ("Jupiter Moons" in "open the Jupiter Moons graph")
};

// Every "@" followed by up to six words (a word ends at white space or , . ; : ! ? @).
std::vector<Reference> mentions(const std::string& message);

// In message order: every "graph" / "network" word (any case) with the name said right before it
// in the same sentence (back to a verb, "to" or a filler word), each candidate offered with the
// trigger word ("Swift Kelce Network") before without it ("Swift Kelce") — and every "open" /
// "switch to" / "use" / "select" with up to six words after it that the request ends after
// ("switch to Solar System", "… and add Pluto"), which must name a graph whole (no part of a name,
// no notice when nothing does); "go to" only with "graph" or "network" after the name.
std::vector<Reference> graph_phrases(const std::string& message);

// "this graph", "the current graph", "the active network", "the same graph": the message keeps to
// the graph it is in; only an explicit "open / switch to …" changes it then.
bool pins_current_graph(const std::string& message);

// Words that never name a graph on their own: "this graph", "the whole network", "a new graph".
bool only_filler_words(const std::string& phrase);

}  // namespace graph
