#include "graphs.hpp"

#include "fuzzy.hpp"
#include "mentions.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace graph {
namespace {

std::set<std::string> words_of(const std::string& normal) {
    std::istringstream in(normal);
    std::set<std::string> out;
    for (std::string w; in >> w;) out.insert(w);
    return out;
}

GraphRef ref_of(const json& row) { return {row["id"].get<int64_t>(), row["name"].get<std::string>()}; }

}  // namespace

std::optional<GraphRef> Graphs::by_id(int64_t id) {
    json g = db_.one("SELECT id, name FROM graphs WHERE id = ?", {id});
    return g.is_null() ? std::nullopt : std::optional<GraphRef>(ref_of(g));
}

std::optional<GraphRef> Graphs::exactly_named(const std::string& name) {
    const std::string wanted = exact_form(name);
    if (wanted.empty()) return std::nullopt;
    for (const auto& row : db_.query("SELECT id, name FROM graphs ORDER BY id"))
        if (exact_form(row["name"]) == wanted) return ref_of(row);
    return std::nullopt;
}

std::optional<GraphRef> Graphs::named(const std::string& name) {
    if (auto exact = exactly_named(name)) return exact;
    double best = threshold_;
    std::optional<GraphRef> found;
    for (const auto& row : db_.query("SELECT id, name FROM graphs ORDER BY id"))
        if (double score = similarity(name, row["name"]); score >= best) {
            best = score;
            found = ref_of(row);
        }
    return found;
}

std::optional<GraphRef> Graphs::loosely_named(const std::string& phrase) {
    // An exact name wins before any filler-word logic: "My Graph" or "Other" is a name too.
    if (auto exact = exactly_named(phrase)) return exact;
    if (only_filler_words(phrase)) return std::nullopt;
    if (auto close = named(phrase)) return close;
    std::set<std::string> wanted;
    for (const auto& w : words_of(normal_form(phrase)))
        if (!only_filler_words(w)) wanted.insert(w);
    if (wanted.empty()) return std::nullopt;
    std::optional<GraphRef> found;
    for (const auto& row : db_.query("SELECT id, name FROM graphs ORDER BY id")) {
        std::set<std::string> have = words_of(normal_form(row["name"]));
        if (!std::includes(have.begin(), have.end(), wanted.begin(), wanted.end())) continue;
        if (found) return std::nullopt;  // two graphs hold those words: the phrase names neither
        found = ref_of(row);
    }
    return found;
}

std::optional<GraphRef> Graphs::resolve(const std::string& name, std::string_view conversation, std::string& error) {
    if (name.empty()) {
        auto g = active(conversation);
        if (!g) error = "there is no active graph; create_graph or set_active_graph first (graphs: " + names() + ")";
        return g;
    }
    auto g = loosely_named(name);  // as a message names graphs: "swift kelce" finds "Swift Kelce Network"
    if (!g) error = "there is no graph named '" + name + "' (graphs: " + names() + ")";
    return g;
}

std::optional<GraphRef> Graphs::active(std::string_view conversation) {
    if (!conversation.empty())
        if (auto chosen = host_.memory_get(conversation, "active_graph"); chosen && chosen->is_string())
            if (auto g = named(chosen->get<std::string>())) return g;
    json row = db_.one("SELECT value FROM settings WHERE key = 'active_graph'");
    if (row.is_null()) return std::nullopt;
    auto g = by_id(std::stoll(row["value"].get<std::string>()));
    // The default becomes the conversation's own the first time it is used, so a switch made in
    // another conversation later leaves this one where it was.
    if (g && !conversation.empty()) host_.memory_set(conversation, "active_graph", g->name);
    return g;
}

void Graphs::set_active(std::string_view conversation, const GraphRef& graph) {
    db_.run("INSERT OR REPLACE INTO settings (key, value) VALUES ('active_graph', ?)", {std::to_string(graph.id)});
    if (conversation.empty()) return;
    host_.memory_set(conversation, "active_graph", graph.name);
    remember(conversation, graph.name);
}

void Graphs::remember(std::string_view conversation, const std::string& name) {
    if (conversation.empty()) return;
    std::vector<std::string> list = recent(conversation);
    if (!list.empty() && list.back() == name) return;
    list.erase(std::remove(list.begin(), list.end(), name), list.end());
    list.push_back(name);
    if (list.size() > 5) list.erase(list.begin(), list.end() - 5);
    host_.memory_set(conversation, "recent_graphs", list);
}

std::vector<std::string> Graphs::recent(std::string_view conversation) {
    std::vector<std::string> out;
    if (conversation.empty()) return out;
    json list = host_.memory_get(conversation, "recent_graphs").value_or(json::array());
    if (list.is_array())
        for (const auto& n : list)
            if (n.is_string()) out.push_back(n);
    return out;
}

std::string Graphs::names() {
    std::string out;
    for (const auto& g : db_.query("SELECT name FROM graphs ORDER BY name"))
        out += (out.empty() ? "" : ", ") + g["name"].get<std::string>();
    return out.empty() ? "none yet" : out;
}

}  // namespace graph
