#include "render.hpp"

#include "fuzzy.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace graph {
namespace fs = std::filesystem;
namespace {

std::string xml_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

// Mermaid labels: a double quote is written as an entity.
std::string mermaid_text(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '"' ? std::string("#quot;") : std::string(1, c);
    return out;
}

// A DOT string: backslashes and double quotes escaped, line breaks as \n.
std::string dot_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string yaml(const std::string& s) { return json(s).dump(); }  // a JSON string is valid YAML

// "- Type → [[Target]]" → (Type, Target); nullopt for any other line.
std::optional<std::pair<std::string, std::string>> connection_line(const std::string& line) {
    size_t arrow = line.find(" → [["), close = line.rfind("]]");
    if (line.rfind("- ", 0) != 0 || arrow == std::string::npos || close == std::string::npos || close <= arrow)
        return std::nullopt;
    return std::make_pair(line.substr(2, arrow - 2), line.substr(arrow + 7, close - arrow - 7));
}

// A concept note's sections: its own links (read back by reindex), and what the graph derives.
constexpr const char* kConnections = "## Connections";
constexpr const char* kLinkedFrom = "## Linked from";
constexpr const char* kGroups = "## Frames and storylines";

// A description line that reads as one of those headings (after any backslashes) is written with
// one more backslash and read back with one less, so a description never opens a section of its
// own: its lines stay its lines through any number of writes and reindexes.
bool reads_as_heading(const std::string& line) {
    size_t start = line.find_first_not_of('\\');
    if (start == std::string::npos) return false;
    std::string_view rest = std::string_view(line).substr(start);
    return rest == kConnections || rest == kLinkedFrom || rest == kGroups;
}

std::string escaped_description(const std::string& description) {
    std::string out;
    std::istringstream in(description);
    bool first = true;
    for (std::string line; std::getline(in, line); first = false) {
        if (!first) out += '\n';
        if (reads_as_heading(line)) out += '\\';
        out += line;
    }
    return out;
}

std::string unescaped_description_line(const std::string& line) {
    return line.rfind('\\', 0) == 0 && reads_as_heading(line) ? line.substr(1) : line;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
    std::string out;
    for (const auto& x : items) out += (out.empty() ? "" : separator) + x;
    return out;
}

// For each node (instance id): the frames it is in and its places in storylines ("Title (2)").
struct Membership {
    std::map<int64_t, std::vector<std::string>> frames, storylines;
};

Membership membership(const json& doc) {
    std::map<std::string, int64_t> by_name;
    for (const auto& n : doc["nodes"]) by_name.emplace(n["name"].get<std::string>(), n["id"].get<int64_t>());
    Membership m;
    for (const auto& f : doc["frames"])
        for (const auto& member : f["members"])
            if (auto it = by_name.find(member.get<std::string>()); it != by_name.end()) m.frames[it->second].push_back(f["name"]);
    for (const auto& s : doc["storylines"]) {
        int step = 0;
        for (const auto& member : s["members"])
            if (auto it = by_name.find(member.get<std::string>()); it != by_name.end())
                m.storylines[it->second].push_back(s["title"].get<std::string>() + " (" + std::to_string(++step) + ")");
    }
    return m;
}

// The members of a frame or storyline as node ids of this graph, in order.
std::vector<int64_t> member_ids(const json& doc, const json& members) {
    std::vector<int64_t> ids;
    for (const auto& member : members)
        for (const auto& n : doc["nodes"])
            if (n["name"] == member) {
                ids.push_back(n["id"]);
                break;
            }
    return ids;
}

std::string graphml(const json& doc) {
    std::ostringstream out;
    Membership m = membership(doc);
    out << R"(<?xml version="1.0" encoding="UTF-8"?>)"
        << "\n"
        << R"(<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance")"
        << R"( xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">)"
        << "\n";
    for (const char* key : {"name", "type", "color", "description", "graph", "frames", "storylines"})
        out << "  <key id=\"" << key << "\" for=\"node\" attr.name=\"" << key << "\" attr.type=\"string\"/>\n";
    out << R"(  <key id="external" for="node" attr.name="external" attr.type="boolean"><default>false</default></key>)"
        << "\n"
        << R"(  <key id="label" for="edge" attr.name="label" attr.type="string"/>)"
        << "\n"
        << R"(  <key id="directed" for="edge" attr.name="directed" attr.type="boolean"/>)"
        << "\n"
        << R"(  <key id="graph_frames" for="graph" attr.name="frames" attr.type="string"/>)"
        << "\n"
        << R"(  <key id="graph_storylines" for="graph" attr.name="storylines" attr.type="string"/>)"
        << "\n"
        << "  <graph id=\"" << xml_escape(doc["graph"]["name"]) << "\" edgedefault=\"directed\">\n"
        << "    <data key=\"graph_frames\">" << xml_escape(doc["frames"].dump()) << "</data>\n"
        << "    <data key=\"graph_storylines\">" << xml_escape(doc["storylines"].dump()) << "</data>\n";
    auto node = [&](const json& n, const std::string& graph_name, bool external) {
        int64_t id = n["id"];
        out << "    <node id=\"n" << id << "\">";
        for (const char* key : {"name", "type", "color", "description"})
            out << "<data key=\"" << key << "\">" << xml_escape(n.value(key, "")) << "</data>";
        out << "<data key=\"graph\">" << xml_escape(graph_name) << "</data>";
        if (m.frames.count(id)) out << "<data key=\"frames\">" << xml_escape(joined(m.frames[id], "; ")) << "</data>";
        if (m.storylines.count(id)) out << "<data key=\"storylines\">" << xml_escape(joined(m.storylines[id], "; ")) << "</data>";
        if (external) out << "<data key=\"external\">true</data>";
        out << "</node>\n";
    };
    for (const auto& n : doc["nodes"]) node(n, doc["graph"]["name"], false);
    for (const auto& n : doc["external_nodes"]) node(n, n["graph_name"], true);
    for (const auto& e : doc["edges"])
        out << "    <edge source=\"n" << e["source"] << "\" target=\"n" << e["target"] << "\"><data key=\"label\">"
            << xml_escape(e["type"]) << "</data><data key=\"directed\">" << (e["directed"].get<bool>() ? "true" : "false")
            << "</data></edge>\n";
    out << "  </graph>\n</graphml>\n";
    return out.str();
}

std::string mermaid(const json& doc) {
    std::ostringstream out;
    out << "graph LR\n";
    std::set<int64_t> framed;
    int f = 0;
    for (const auto& frame : doc["frames"]) {  // a node shows in its first frame (Mermaid draws each node once)
        std::vector<int64_t> inside;
        for (int64_t id : member_ids(doc, frame["members"]))
            if (framed.insert(id).second) inside.push_back(id);
        out << "  subgraph frame" << ++f << "[\"" << mermaid_text(frame["name"]) << "\"]\n";
        for (int64_t id : inside)
            for (const auto& n : doc["nodes"])
                if (n["id"] == id) out << "    n" << id << "[\"" << mermaid_text(n["name"]) << "\"]\n";
        out << "  end\n";
    }
    for (const auto& n : doc["nodes"])
        if (!framed.count(n["id"].get<int64_t>())) out << "  n" << n["id"] << "[\"" << mermaid_text(n["name"]) << "\"]\n";
    std::map<std::string, std::vector<const json*>> outside;  // other graphs' nodes this graph links to
    for (const auto& n : doc["external_nodes"]) outside[n["graph_name"]].push_back(&n);
    int g = 0;
    for (const auto& [graph_name, nodes] : outside) {
        out << "  subgraph other" << ++g << "[\"" << mermaid_text(graph_name) << " (other graph)\"]\n";
        for (const json* n : nodes) out << "    n" << (*n)["id"] << "[\"" << mermaid_text((*n)["name"]) << "\"]\n";
        out << "  end\n";
    }
    for (const auto& e : doc["edges"])
        out << "  n" << e["source"] << (e["directed"].get<bool>() ? " -->|\"" : " ---|\"") << mermaid_text(e["type"]) << "\"| n"
            << e["target"] << "\n";
    for (const auto& s : doc["storylines"]) {
        std::vector<int64_t> path = member_ids(doc, s["members"]);
        for (size_t i = 1; i < path.size(); ++i)
            out << "  n" << path[i - 1] << " -.->|\"" << mermaid_text(s["title"]) << " " << i << "\"| n" << path[i] << "\n";
    }
    return out.str();
}

std::string dot(const json& doc) {
    std::ostringstream out;
    out << "digraph \"" << dot_text(doc["graph"]["name"]) << "\" {\n";
    auto node = [&](const json& n) {
        return "n" + n["id"].dump() + " [label=\"" + dot_text(n["name"]) + "\", color=\"" + dot_text(n.value("color", "")) +
               "\"];";
    };
    for (const auto& n : doc["nodes"]) out << "  " << node(n) << "\n";
    int f = 0;
    for (const auto& frame : doc["frames"]) {
        out << "  subgraph \"cluster_frame" << ++f << "\" {\n    label=\"" << dot_text(frame["name"]) << "\";\n";
        for (int64_t id : member_ids(doc, frame["members"])) out << "    n" << id << ";\n";
        out << "  }\n";
    }
    std::map<std::string, std::vector<const json*>> outside;
    for (const auto& n : doc["external_nodes"]) outside[n["graph_name"]].push_back(&n);
    int g = 0;
    for (const auto& [graph_name, nodes] : outside) {
        out << "  subgraph \"cluster_other" << ++g << "\" {\n    label=\"" << dot_text(graph_name)
            << " (other graph)\";\n    style=dashed;\n";
        for (const json* n : nodes) out << "    " << node(*n) << "\n";
        out << "  }\n";
    }
    for (const auto& e : doc["edges"])
        out << "  n" << e["source"] << " -> n" << e["target"] << " [label=\"" << dot_text(e["type"]) << "\""
            << (e["directed"].get<bool>() ? "" : ", dir=none") << "];\n";
    for (const auto& s : doc["storylines"]) {
        std::vector<int64_t> path = member_ids(doc, s["members"]);
        for (size_t i = 1; i < path.size(); ++i)
            out << "  n" << path[i - 1] << " -> n" << path[i] << " [label=\"" << dot_text(s["title"]) << " " << i
                << "\", style=dashed, constraint=false];\n";
    }
    out << "}\n";
    return out.str();
}

}  // namespace

std::string note_name(const std::string& name) {
    std::string out;
    for (char c : name) out += std::string("/\\:*?\"<>|#^[]").find(c) == std::string::npos ? c : '-';
    while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
    if (out.empty()) return "untitled";
    // "Graph - …" names a graph's index note: a concept called "Graph - Rock Music" gets a note of
    // its own beside it, and reindex reads it (its front matter keeps the real name).
    if (out.rfind("Graph - ", 0) == 0) return "Concept - " + out;
    return out;
}

json graph_document(GraphDb& db, int64_t graph_id) {
    json g = db.one("SELECT id, name, description FROM graphs WHERE id = ?", {graph_id});
    json doc{{"graph", g},
             {"nodes", json::array()},
             {"edges", json::array()},
             {"frames", json::array()},
             {"storylines", json::array()}};
    doc["nodes"] = db.query(
        "SELECT i.id AS id, c.id AS concept, c.name, c.description, c.type, c.color, i.x, i.y FROM instances i "
        "JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ? ORDER BY i.id",
        {graph_id});
    doc["edges"] = db.query(
        "SELECT e.id, e.source, e.target, sc.name AS source_name, tc.name AS target_name, t.name AS type, e.directed,"
        " si.graph_id AS source_graph, ti.graph_id AS target_graph FROM edges e JOIN instances si ON si.id = e.source "
        "JOIN instances ti ON ti.id = e.target JOIN concepts sc ON sc.id = si.concept_id JOIN concepts tc ON tc.id = "
        "ti.concept_id "
        "JOIN connection_types t ON t.id = e.type_id WHERE si.graph_id = ?1 OR ti.graph_id = ?1 ORDER BY e.id",
        {graph_id});
    for (auto& e : doc["edges"]) e["directed"] = e["directed"].get<int64_t>() != 0;  // as the spec says it: true / false
    // Endpoints in other graphs of this graph's edges: declared, so no export has a nameless node.
    doc["external_nodes"] = db.query(
        "SELECT DISTINCT i.id AS id, c.id AS concept, c.name, c.description, c.type, c.color, g.name AS graph_name FROM edges e"
        " JOIN instances si ON si.id = e.source JOIN instances ti ON ti.id = e.target"
        " JOIN instances i ON i.id = CASE WHEN si.graph_id = ?1 THEN e.target ELSE e.source END"
        " JOIN concepts c ON c.id = i.concept_id JOIN graphs g ON g.id = i.graph_id"
        " WHERE (si.graph_id = ?1) <> (ti.graph_id = ?1) ORDER BY i.id",
        {graph_id});
    for (auto& f : db.query("SELECT id, name, members FROM frames WHERE graph_id = ? ORDER BY id", {graph_id})) {
        f["members"] = json::parse(f["members"].get<std::string>());
        doc["frames"].push_back(f);
    }
    for (auto& s : db.query("SELECT id, title, members FROM storylines WHERE graph_id = ? ORDER BY id", {graph_id})) {
        s["members"] = json::parse(s["members"].get<std::string>());
        doc["storylines"].push_back(s);
    }
    return doc;
}

std::string export_graph(GraphDb& db, int64_t graph_id, const std::string& format) {
    using Writer = std::string (*)(const json&);
    static const std::map<std::string, Writer, std::less<>> writers{
        {"json", [](const json& doc) { return doc.dump(2); }}, {"graphml", graphml}, {"mermaid", mermaid}, {"dot", dot}};
    auto writer = writers.find(format);
    return writer == writers.end() ? "" : writer->second(graph_document(db, graph_id));
}

void Vault::write(GraphDb& db, const std::set<int64_t>& concepts, const std::set<std::string>& removed) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    std::set<std::string> known_notes;
    if (!concepts.empty())
        for (const auto& row : db.query("SELECT name FROM concepts")) known_notes.insert(note_name(row["name"]));
    for (int64_t id : concepts) {
        json c = db.one("SELECT id, name, description, type, color FROM concepts WHERE id = ?", {id});
        json written = db.one("SELECT note, links FROM vault_notes WHERE concept_id = ?", {id});
        const std::string old_note = written.is_null() ? std::string() : written["note"].get<std::string>();
        // A note this plugin wrote under a name no concept has now (deleted, renamed, undone) goes.
        const std::string note = c.is_null() ? std::string() : note_name(c["name"]);
        if (!old_note.empty() && old_note != note && !known_notes.count(old_note)) fs::remove(dir_ / (old_note + ".md"), ec);
        if (c.is_null()) {
            db.run("DELETE FROM vault_notes WHERE concept_id = ?", {id});
            continue;
        }
        std::set<std::string> wrote_before;  // the Connections lines this plugin wrote last time
        if (!written.is_null())
            for (const auto& line : json::parse(written["links"].get<std::string>(), nullptr, false))
                if (line.is_string()) wrote_before.insert(line.get<std::string>());
        json graphs = db.query(
            "SELECT g.name FROM graphs g JOIN instances i ON i.graph_id = g.id WHERE i.concept_id = ? ORDER BY g.name", {id});
        json links = db.query(
            "SELECT t.name AS type, tc.name AS target FROM edges e JOIN instances si ON si.id = e.source JOIN instances ti ON "
            "ti.id = e.target "
            "JOIN concepts tc ON tc.id = ti.concept_id JOIN connection_types t ON t.id = e.type_id WHERE si.concept_id = ? ORDER "
            "BY tc.name",
            {id});
        json backlinks = db.query(
            "SELECT DISTINCT t.name AS type, sc.name AS source FROM edges e JOIN instances si ON si.id = e.source JOIN instances "
            "ti ON ti.id = e.target "
            "JOIN concepts sc ON sc.id = si.concept_id JOIN connection_types t ON t.id = e.type_id WHERE ti.concept_id = ? ORDER "
            "BY sc.name",
            {id});
        // Links a person wrote to notes that are no concept yet stay (reindex reports them) until
        // fixed; a line this plugin wrote to a concept since removed goes with it.
        std::vector<std::string> kept;
        fs::path previous = dir_ / ((old_note.empty() || fs::exists(dir_ / (note + ".md")) ? note : old_note) + ".md");
        if (std::ifstream before(previous); before) {
            bool in_connections = false;
            for (std::string line; std::getline(before, line);) {
                if (line.rfind("## ", 0) == 0) in_connections = line == kConnections;
                auto link = in_connections ? connection_line(line) : std::nullopt;
                if (link && !known_notes.count(link->second) && !wrote_before.count(line)) kept.push_back(line);
            }
        }
        json wrote = json::array();
        for (const auto& l : links)
            wrote.push_back("- " + l["type"].get<std::string>() + " → [[" + note_name(l["target"]) + "]]");
        db.run("INSERT OR REPLACE INTO vault_notes (concept_id, note, links) VALUES (?, ?, ?)", {id, note, wrote.dump()});
        std::ofstream out(dir_ / (note_name(c["name"]) + ".md"));
        out << "---\nname: " << yaml(c["name"]) << "\ntype: " << yaml(c["type"]) << "\ncolor: " << yaml(c["color"])
            << "\ngraphs: [";
        for (size_t i = 0; i < graphs.size(); ++i) out << (i ? ", " : "") << yaml(graphs[i]["name"]);
        out << "]\n---\n" << escaped_description(c["description"]) << "\n";
        if (!links.empty() || !kept.empty()) {
            out << "\n" << kConnections << "\n";
            for (const auto& line : wrote) out << line.get<std::string>() << "\n";
            for (const auto& line : kept) out << line << "\n";
        }
        // Written for the reader (Obsidian shows them as links); reindex reads only Connections.
        if (!backlinks.empty()) {
            out << "\n" << kLinkedFrom << "\n";
            for (const auto& l : backlinks)
                out << "- [[" << note_name(l["source"]) << "]] → " << l["type"].get<std::string>() << "\n";
        }
        std::vector<std::string> groups;
        for (const char* table : {"frames", "storylines"})
            for (const auto& row : db.query(std::string("SELECT x.") + (table[0] == 'f' ? "name" : "title") +
                                            " AS label, x.members, g.name AS graph FROM " + table +
                                            " x JOIN graphs g ON g.id = x.graph_id ORDER BY x.id")) {
                json members = json::parse(row["members"].get<std::string>(), nullptr, false);
                if (!members.is_array() || std::find(members.begin(), members.end(), c["name"]) == members.end()) continue;
                groups.push_back("[[Graph - " + note_name(row["graph"]) + "#" + (table[0] == 'f' ? "Frame: " : "Storyline: ") +
                                 note_name(row["label"]) + "]]");
            }
        if (!groups.empty()) {
            out << "\n" << kGroups << "\n";
            for (const auto& g : groups) out << "- " << g << "\n";
        }
    }
    for (const auto& name : removed)
        if (db.one("SELECT id FROM concepts WHERE name = ?", {name}).is_null()) fs::remove(dir_ / (note_name(name) + ".md"), ec);
    for (const auto& g : db.query("SELECT id, name, description FROM graphs")) {
        std::ofstream out(dir_ / ("Graph - " + note_name(g["name"]) + ".md"));
        out << "---\ngraph: " << yaml(g["name"]) << "\n---\n" << g["description"].get<std::string>() << "\n\n## Concepts\n";
        for (const auto& n : db.query(
                 "SELECT c.name FROM instances i JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ? ORDER BY c.name",
                 {g["id"]}))
            out << "- [[" << note_name(n["name"]) << "]]\n";
        // Frames as lists and storylines as numbered lists of wikilinks, under headings members link to.
        for (const auto& f : db.query("SELECT name, members FROM frames WHERE graph_id = ? ORDER BY id", {g["id"]})) {
            out << "\n## Frame: " << note_name(f["name"]) << "\n";
            for (const auto& m : json::parse(f["members"].get<std::string>())) out << "- [[" << note_name(m) << "]]\n";
        }
        for (const auto& s : db.query("SELECT title, members FROM storylines WHERE graph_id = ? ORDER BY id", {g["id"]})) {
            out << "\n## Storyline: " << note_name(s["title"]) << "\n";
            int step = 0;
            for (const auto& m : json::parse(s["members"].get<std::string>())) out << ++step << ". [[" << note_name(m) << "]]\n";
        }
    }
}

void Vault::write_all(GraphDb& db) {
    std::set<int64_t> all;
    for (const auto& c : db.query("SELECT id FROM concepts")) all.insert(c["id"].get<int64_t>());
    write(db, all);
}

json Vault::reindex(GraphDb& db) {
    int updated = 0, created = 0, linked = 0;
    std::error_code ec;
    struct Note {
        std::string name, type, color, description;
        std::vector<std::string> graphs;
        std::vector<std::pair<std::string, std::string>> links;  // type, target note
    };
    std::vector<Note> notes;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        std::string file = entry.path().filename().string();
        if (entry.path().extension() != ".md" || file.rfind("Graph - ", 0) == 0) continue;
        std::ifstream in(entry.path());
        Note note;
        note.name = entry.path().stem().string();
        std::string line;
        bool front = false;
        enum class Section { description, connections, derived } section = Section::description;
        int fences = 0;
        while (std::getline(in, line)) {
            if (line == "---" && fences < 2) {
                front = ++fences == 1;
                continue;
            }
            if (front) {
                size_t colon = line.find(": ");
                if (colon == std::string::npos) continue;
                std::string key = line.substr(0, colon), value = line.substr(colon + 2);
                json v = json::parse(value, nullptr, false);
                if (key == "graphs") {
                    json list = json::parse(value, nullptr, false);
                    if (list.is_array())
                        for (const auto& g : list)
                            if (g.is_string()) note.graphs.push_back(g);
                } else {
                    std::string text = v.is_string() ? v.get<std::string>() : value;
                    if (key == "name") note.name = text;
                    if (key == "type") note.type = text;
                    if (key == "color") note.color = text;
                }
                continue;
            }
            if (line == kConnections || line == kLinkedFrom || line == kGroups) {
                section = line == kConnections ? Section::connections : Section::derived;
                continue;
            }
            if (section == Section::derived) continue;  // backlinks and groups follow from the rest
            if (section == Section::connections) {
                if (auto link = connection_line(line)) note.links.push_back(*link);
                continue;
            }
            note.description += (note.description.empty() ? "" : "\n") + unescaped_description_line(line);
        }
        while (!note.description.empty() && note.description.back() == '\n') note.description.pop_back();
        notes.push_back(std::move(note));
    }
    return db.batch([&] {
        std::map<std::string, int64_t> by_note;
        for (const auto& n : notes) {
            json c = db.one("SELECT id, description, type, color FROM concepts WHERE name = ?", {n.name});
            if (c.is_null()) {
                int64_t id = db.insert("concepts", {{"name", n.name},
                                                    {"description", n.description},
                                                    {"type", n.type},
                                                    {"color", n.color},
                                                    {"norm", normal_form(n.name)}});
                for (const auto& g : n.graphs) {
                    json graph = db.one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {g});
                    if (graph.is_null()) continue;
                    json far = db.one("SELECT COALESCE(MAX(x), 0) AS x FROM instances WHERE graph_id = ?", {graph["id"]});
                    db.insert("instances",
                              {{"graph_id", graph["id"]}, {"concept_id", id}, {"x", far["x"].get<double>() + 200}, {"y", 0}});
                }
                by_note[note_name(n.name)] = id;
                ++created;
                continue;
            }
            by_note[note_name(n.name)] = c["id"];
            if (c["description"] != n.description || c["type"] != n.type || c["color"] != n.color) {
                db.update("concepts", c["id"], {{"description", n.description}, {"type", n.type}, {"color", n.color}});
                ++updated;
            }
        }
        json unresolved = json::array();  // links to notes that are not concepts: reported, never dropped in silence
        for (const auto& n : notes) {
            // A line this plugin wrote is what the database said then: one it no longer has was
            // removed there (a delete, an undo) and is not brought back.
            std::set<std::string> wrote;
            if (auto self = by_note.find(note_name(n.name)); self != by_note.end())
                if (json row = db.one("SELECT links FROM vault_notes WHERE concept_id = ?", {self->second}); !row.is_null())
                    for (const auto& line : json::parse(row["links"].get<std::string>(), nullptr, false))
                        if (line.is_string()) wrote.insert(line.get<std::string>());
            for (const auto& [type, target] : n.links) {
                if (wrote.count("- " + type + " → [[" + target + "]]")) continue;
                auto s = by_note.find(note_name(n.name)), t = by_note.find(target);
                if (s == by_note.end() || t == by_note.end()) {
                    unresolved.push_back(n.name + " → " + target);
                    continue;
                }
                // A link the graph has already (in any graph: a cross-graph edge is listed in its
                // source's note too) is not a new one.
                json known = db.one(
                    "SELECT e.id FROM edges e JOIN instances a ON a.id = e.source JOIN instances b ON b.id = e.target"
                    " JOIN connection_types t ON t.id = e.type_id WHERE a.concept_id = ? AND b.concept_id = ? AND t.name = ?"
                    " COLLATE NOCASE",
                    {s->second, t->second, title_case(type)});
                if (!known.is_null()) continue;
                // The link lives in the first graph both concepts are in.
                json pair = db.one(
                    "SELECT a.id AS a, b.id AS b FROM instances a JOIN instances b ON a.graph_id = b.graph_id "
                    "WHERE a.concept_id = ? AND b.concept_id = ? ORDER BY a.graph_id LIMIT 1",
                    {s->second, t->second});
                if (pair.is_null()) continue;
                std::string type_name = title_case(type);
                json type_row = db.one("SELECT id FROM connection_types WHERE name = ? COLLATE NOCASE", {type_name});
                int64_t type_id =
                    type_row.is_null() ? db.insert("connection_types", {{"name", type_name}}) : type_row["id"].get<int64_t>();
                if (!db.one("SELECT id FROM edges WHERE source = ? AND target = ? AND type_id = ?",
                            {pair["a"], pair["b"], type_id})
                         .is_null())
                    continue;
                db.insert("edges", {{"source", pair["a"]}, {"target", pair["b"]}, {"type_id", type_id}, {"directed", 1}});
                ++linked;
            }
        }
        return json{{"change", "reindex_vault"},
                    {"updated", updated},
                    {"created", created},
                    {"linked", linked},
                    {"unresolved", unresolved}};
    });
}

}  // namespace graph
