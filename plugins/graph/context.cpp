#include "context.hpp"

#include "fuzzy.hpp"
#include "mentions.hpp"
#include "render.hpp"

#include <set>

namespace graph {
namespace {

std::string cut(const std::string& text, size_t limit) {
    if (text.size() <= limit) return text;
    size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 character
    return text.substr(0, end) + "…";
}

std::string join(const std::set<std::string>& items) {
    std::string out;
    for (const auto& x : items) out += (out.empty() ? "" : ", ") + x;
    return out;
}

std::string typed(const json& node) {
    std::string type = node.value("type", "");
    return node["name"].get<std::string>() + (type.empty() ? "" : " (" + type + ")");
}

// "the graph 'Chiefs' (12 nodes, 15 edges; e.g. Travis Kelce, Andy Reid, Patrick Mahomes)"
std::string graph_brief(GraphDb& db, const GraphRef& g) {
    json counts = db.one("SELECT (SELECT COUNT(*) FROM instances WHERE graph_id = g.id) AS nodes, (" +
                             std::string(kEdgesOfGraph) + ") AS edges FROM graphs g WHERE g.id = ?",
                         {g.id});
    std::string text = "the graph '" + g.name + "' (" + counts["nodes"].dump() + " nodes, " + counts["edges"].dump() + " edges";
    std::string sample;
    for (const auto& n :
         db.query("SELECT c.name FROM instances i JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ? ORDER BY"
                  " (SELECT COUNT(*) FROM edges e WHERE e.source = i.id OR e.target = i.id) DESC, i.id LIMIT 5",
                  {g.id}))
        sample += (sample.empty() ? "" : ", ") + n["name"].get<std::string>();
    return text + (sample.empty() ? ")" : "; e.g. " + sample + ")");
}

// What one @mention names, or nothing: a graph, a node, then a connection type.
// A mention is a question about something, not a use of it: it does not count as a recent graph.
std::string resolve_mention(GraphDb& db, Graphs& graphs, const std::string& name, double threshold) {
    if (auto g = graphs.named(name)) return "@" + name + " is " + graph_brief(db, *g) + ".";
    for (const auto& row : db.query("SELECT name, type, description FROM concepts ORDER BY id"))
        if (similarity(name, row["name"]) >= threshold) {
            std::string type = row["type"], description = row["description"];
            return "@" + name + " is the node '" + row["name"].get<std::string>() + "'" +
                   (type.empty() ? "" : " (" + type + ")") + (description.empty() ? "" : ": " + description);
        }
    for (const auto& t : db.query("SELECT id, name FROM connection_types ORDER BY id")) {
        if (similarity(title_case(name), t["name"]) < threshold) continue;
        json edges = db.query(
            "SELECT sc.name AS s, tc.name AS t FROM edges e JOIN instances si ON si.id = e.source JOIN concepts sc ON sc.id = "
            "si.concept_id"
            " JOIN instances ti ON ti.id = e.target JOIN concepts tc ON tc.id = ti.concept_id WHERE e.type_id = ? ORDER BY e.id",
            {t["id"]});
        std::string examples;
        for (size_t i = 0; i < edges.size() && i < 5; ++i)
            examples += (i ? ", " : "") + edges[i]["s"].get<std::string>() + " → " + edges[i]["t"].get<std::string>();
        return "@" + name + " is the connection type '" + t["name"].get<std::string>() + "' (" + std::to_string(edges.size()) +
               " edge(s)" + (examples.empty() ? ")" : ": " + examples + ")") + ".";
    }
    return "";
}

// The graph most like `name`, when one is close enough to suggest.
std::string closest_graph(GraphDb& db, const std::string& name) {
    std::string best;
    double best_score = 0.5;
    for (const auto& g : db.query("SELECT name FROM graphs ORDER BY id"))
        if (double score = similarity(name, g["name"]); score > best_score) {
            best_score = score;
            best = g["name"];
        }
    return best;
}

// Words, and whether the first is a lower-case article ("the Graph" said for the graph 'Graph').
int exact_rank(const std::string& candidate) {
    int words = 1;
    for (char c : candidate) words += c == ' ';
    const bool article = candidate.rfind("the ", 0) == 0 || candidate.rfind("a ", 0) == 0 || candidate.rfind("an ", 0) == 0;
    return (article ? 0 : 100) + words;
}

// The message names a graph. First an exact name (any case and accents) said where the message
// asks for a graph wins, whatever words it is made of: the longest, one said without a leading
// lower-case article before one with it ("use the Graph graph" is 'Graph', "open the My Graph
// graph" 'My Graph'). Else the first phrase that resolves loosely: a phrase ending in "graph" may
// name part of a graph's name; one after "switch to" must name it whole.
std::string switch_named_graph(GraphDb& db, Graphs& graphs, const std::string& message, std::string_view conversation) {
    const bool pinned = pins_current_graph(message);  // "… to this graph": only an explicit request switches
    std::vector<Reference> refs = graph_phrases(message);
    auto switch_to = [&](const GraphRef& g) -> std::string {
        auto current = graphs.active(conversation);
        if (current && current->id == g.id) return "";
        graphs.set_active(conversation, g);
        return "The active graph is now '" + g.name + "' (named in the message).\n";
    };
    std::optional<GraphRef> exact;
    int best = -1;
    for (const auto& ref : refs) {
        if (pinned && ref.says_graph && !ref.asks_to_switch) continue;
        for (const auto& candidate : ref.candidates)
            if (auto g = graphs.exactly_named(candidate); g && exact_rank(candidate) > best) {
                best = exact_rank(candidate);
                exact = g;
            }
    }
    if (exact) return switch_to(*exact);
    for (const auto& ref : refs) {
        if (pinned && ref.says_graph && !ref.asks_to_switch) continue;
        for (const auto& candidate : ref.candidates) {
            if (!ref.says_graph && only_filler_words(candidate)) continue;  // "open the": no fuzzy guess
            auto g = ref.says_graph ? graphs.loosely_named(candidate) : graphs.named(candidate);
            if (g) return switch_to(*g);
        }
        if (ref.asks_to_switch && !ref.spoken.empty()) {
            std::string near = closest_graph(db, ref.spoken);
            return "The message asks for a graph named '" + ref.spoken + "', which does not exist" +
                   (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                   "; the active graph is unchanged (graphs: " + graphs.names() + ").\n";
        }
    }
    return "";
}

// One node as the model reads it: name, type, description and its edges in `doc` (its graph), bounded.
std::string described_node(const json& doc, const json& n, const ContextLimits& limits, const std::string& where = "") {
    int64_t id = n["id"];
    std::string text = "\n- " + typed(n) + where;
    if (std::string d = n["description"]; !d.empty()) text += ": " + cut(d, limits.description);
    size_t listed = 0, total = 0;
    for (const auto& e : doc["edges"]) {
        bool out = e["source"] == id, in = e["target"] == id;
        if (!out && !in) continue;
        if (total++ >= limits.edges_per_node) continue;
        ++listed;
        text += "\n  " + (out ? "—" + e["type"].get<std::string>() + "→ " + e["target_name"].get<std::string>()
                              : "←" + e["type"].get<std::string>() + "— " + e["source_name"].get<std::string>());
    }
    if (total > listed) text += "\n  … " + std::to_string(total - listed) + " more edge(s)";
    return text;
}

// A selected node the active graph does not have (the front end showed another graph): described
// from the first graph that has it, with where it is, so the model knows it as well as the others.
std::string described_elsewhere(GraphDb& db, const std::string& norm, const ContextLimits& limits) {
    json c = db.one("SELECT id, name FROM concepts WHERE norm = ?", {norm});
    if (c.is_null()) return "\n- " + norm + " (no such node)";
    json in =
        db.query("SELECT g.id, g.name FROM instances i JOIN graphs g ON g.id = i.graph_id WHERE i.concept_id = ? ORDER BY g.id",
                 {c["id"]});
    if (in.empty()) return "\n- " + c["name"].get<std::string>() + " (in no graph)";
    std::string graphs;
    for (const auto& g : in) graphs += (graphs.empty() ? "" : "', '") + g["name"].get<std::string>();
    json doc = graph_document(db, in[0]["id"]);
    for (const auto& n : doc["nodes"])
        if (n["concept"] == c["id"]) return described_node(doc, n, limits, " [in '" + graphs + "']");
    return "\n- " + c["name"].get<std::string>() + " [in '" + graphs + "']";
}

// The selected nodes with their descriptions and edges, bounded; those of other graphs under a
// heading of their own, each said with the graph it is in. No heading without a node under it.
std::string selected_nodes(GraphDb& db, const json& doc, const std::set<std::string>& selected, const ContextLimits& limits) {
    std::string here, elsewhere;
    size_t shown = 0;
    std::set<std::string> found;
    for (const auto& n : doc["nodes"])
        if (selected.count(normal_form(n["name"]))) found.insert(normal_form(n["name"]));
    for (const auto& n : doc["nodes"]) {
        if (!selected.count(normal_form(n["name"]))) continue;
        if (shown == limits.selected) break;
        ++shown;
        here += described_node(doc, n, limits);
    }
    for (const auto& norm : selected) {
        if (found.count(norm)) continue;
        if (shown == limits.selected) break;
        ++shown;
        elsewhere += described_elsewhere(db, norm, limits);
    }
    std::string text;
    if (!here.empty()) text += "\nSelected by the user:" + here;
    if (!elsewhere.empty()) text += "\nSelected by the user, in another graph than the active one:" + elsewhere;
    if (selected.size() > shown) text += "\n- … " + std::to_string(selected.size() - shown) + " more selected";
    return text;
}

}  // namespace

std::string model_context(GraphDb& db, Graphs& graphs, const agenthost::sdk::Call& call, const ContextLimits& limits) {
    const json& ctx = call.request_context;
    const std::string message =
        ctx.contains("user_message") && ctx["user_message"].is_string() ? ctx["user_message"].get<std::string>() : "";
    const bool refresh = ctx.value("context_refresh", false);
    std::string notes;
    if (!refresh) {
        // A front end's choice first; a graph the message names wins over it.
        if (ctx.contains("active_graph") && ctx["active_graph"].is_string())
            if (auto g = graphs.named(ctx["active_graph"])) graphs.set_active(call.conversation, *g);
        notes += switch_named_graph(db, graphs, message, call.conversation);
    }
    std::set<std::string> said;  // "@Earth @Earth" is told once
    for (const auto& ref : mentions(message)) {
        std::string note;
        for (const auto& candidate : ref.candidates)
            if (note = resolve_mention(db, graphs, candidate, limits.match_threshold); !note.empty()) break;
        if (note.empty())  // the model is told, so it does not guess
            note = "@" + ref.candidates.back() + " names no graph, node or connection type here.";
        if (said.insert(note).second) notes += note + "\n";
    }

    auto g = graphs.active(call.conversation);
    if (!g) return notes + (db.one("SELECT id FROM graphs").is_null() ? "" : "Graphs: " + graphs.names() + ". None is active.");
    graphs.remember(call.conversation, g->name);
    json doc = graph_document(db, g->id);
    std::string text = notes + "Active graph: '" + g->name + "' (" + std::to_string(doc["nodes"].size()) + " nodes, " +
                       std::to_string(doc["edges"].size()) + " edges).";
    std::vector<std::string> recent = graphs.recent(call.conversation);
    if (recent.size() > 1) {
        std::string others;
        for (auto it = recent.rbegin(); it != recent.rend(); ++it)
            if (*it != g->name) others += (others.empty() ? "" : ", ") + *it;
        text += " Recently used here: " + others + ".";
    }
    std::set<std::string> selected;
    // Names, or objects with a "name" (as a front end holds nodes: {"name": …, "graph": …}).
    for (const auto& s : ctx.value("selected_nodes", json::array()))
        if (s.is_string())
            selected.insert(normal_form(s));
        else if (s.is_object() && s.contains("name") && s["name"].is_string())
            selected.insert(normal_form(s["name"]));
    if (!selected.empty()) {
        text += selected_nodes(db, doc, selected, limits);
    } else if (doc["nodes"].empty()) {
        text += " It has no nodes yet.";
    } else {
        text += " Nodes:";
        int count = 0;
        for (const auto& n : doc["nodes"]) {
            if (count >= limits.nodes) break;
            text += (count++ ? ", " : " ") + n["name"].get<std::string>();
        }
        if (doc["nodes"].size() > static_cast<size_t>(count)) text += " …";
    }
    std::set<std::string> types, colors;
    for (const auto& n : doc["nodes"]) colors.insert(n["color"]);
    for (const auto& e : doc["edges"]) types.insert(e["type"]);
    if (!types.empty()) text += "\nConnection types in use: " + join(types) + ".";
    if (!colors.empty()) text += "\nColours in use: " + join(colors) + ".";
    return text;
}

}  // namespace graph
