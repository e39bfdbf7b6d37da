#include "render.hpp"

#include "fuzzy.hpp"

#include <fstream>
#include <map>
#include <sstream>

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

std::string quoted(const std::string& s) {  // for mermaid labels and dot ids
    std::string out;
    for (char c : s) out += c == '"' ? std::string("#quot;") : std::string(1, c);
    return out;
}

std::string yaml(const std::string& s) { return json(s).dump(); }  // a JSON string is valid YAML

}  // namespace

std::string note_name(const std::string& name) {
    std::string out;
    for (char c : name) out += std::string("/\\:*?\"<>|#^[]").find(c) == std::string::npos ? c : '-';
    while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
    return out.empty() ? "untitled" : out;
}

json graph_document(GraphDb& db, int64_t graph_id) {
    json g = db.one("SELECT id, name, description FROM graphs WHERE id = ?", {graph_id});
    json doc{{"graph", g}, {"nodes", json::array()}, {"edges", json::array()}, {"frames", json::array()}, {"storylines", json::array()}};
    doc["nodes"] = db.query(
        "SELECT i.id AS id, c.id AS concept, c.name, c.description, c.type, c.color, i.x, i.y FROM instances i "
        "JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ? ORDER BY i.id",
        {graph_id});
    doc["edges"] = db.query(
        "SELECT e.id, e.source, e.target, sc.name AS source_name, tc.name AS target_name, t.name AS type, e.directed,"
        " si.graph_id AS source_graph, ti.graph_id AS target_graph FROM edges e JOIN instances si ON si.id = e.source "
        "JOIN instances ti ON ti.id = e.target JOIN concepts sc ON sc.id = si.concept_id JOIN concepts tc ON tc.id = ti.concept_id "
        "JOIN connection_types t ON t.id = e.type_id WHERE si.graph_id = ?1 OR ti.graph_id = ?1 ORDER BY e.id",
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
    json doc = graph_document(db, graph_id);
    if (format == "json") return doc.dump(2);
    std::ostringstream out;
    if (format == "graphml") {
        out << R"(<?xml version="1.0" encoding="UTF-8"?>)" << "\n"
            << R"(<graphml xmlns="http://graphml.graphdrawing.org/xmlns">)" << "\n"
            << R"(  <key id="name" for="node" attr.name="name" attr.type="string"/>)" << "\n"
            << R"(  <key id="type" for="node" attr.name="type" attr.type="string"/>)" << "\n"
            << R"(  <key id="color" for="node" attr.name="color" attr.type="string"/>)" << "\n"
            << R"(  <key id="label" for="edge" attr.name="label" attr.type="string"/>)" << "\n"
            << "  <graph id=\"" << xml_escape(doc["graph"]["name"]) << "\" edgedefault=\"directed\">\n";
        for (const auto& n : doc["nodes"])
            out << "    <node id=\"n" << n["id"] << "\"><data key=\"name\">" << xml_escape(n["name"]) << "</data><data key=\"type\">"
                << xml_escape(n["type"]) << "</data><data key=\"color\">" << xml_escape(n["color"]) << "</data></node>\n";
        for (const auto& e : doc["edges"])
            out << "    <edge source=\"n" << e["source"] << "\" target=\"n" << e["target"] << "\"><data key=\"label\">"
                << xml_escape(e["type"]) << "</data></edge>\n";
        out << "  </graph>\n</graphml>\n";
        return out.str();
    }
    if (format == "mermaid") {
        out << "graph LR\n";
        for (const auto& n : doc["nodes"]) out << "  n" << n["id"] << "[\"" << quoted(n["name"]) << "\"]\n";
        for (const auto& e : doc["edges"])
            out << "  n" << e["source"] << (e["directed"].get<int64_t>() ? " -->|\"" : " ---|\"") << quoted(e["type"]) << "\"| n" << e["target"] << "\n";
        return out.str();
    }
    if (format == "dot") {
        out << "digraph \"" << quoted(doc["graph"]["name"]) << "\" {\n";
        for (const auto& n : doc["nodes"])
            out << "  n" << n["id"] << " [label=\"" << quoted(n["name"]) << "\", color=\"" << n["color"].get<std::string>() << "\"];\n";
        for (const auto& e : doc["edges"])
            out << "  n" << e["source"] << " -> n" << e["target"] << " [label=\"" << quoted(e["type"]) << "\""
                << (e["directed"].get<int64_t>() ? "" : ", dir=none") << "];\n";
        out << "}\n";
        return out.str();
    }
    return "";
}

void Vault::write(GraphDb& db, const std::set<int64_t>& concepts, const std::set<std::string>& removed) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    for (int64_t id : concepts) {
        json c = db.one("SELECT id, name, description, type, color FROM concepts WHERE id = ?", {id});
        if (c.is_null()) continue;  // deleted: its note goes below
        json graphs = db.query("SELECT g.name FROM graphs g JOIN instances i ON i.graph_id = g.id WHERE i.concept_id = ? ORDER BY g.name", {id});
        json links = db.query(
            "SELECT t.name AS type, tc.name AS target FROM edges e JOIN instances si ON si.id = e.source JOIN instances ti ON ti.id = e.target "
            "JOIN concepts tc ON tc.id = ti.concept_id JOIN connection_types t ON t.id = e.type_id WHERE si.concept_id = ? ORDER BY tc.name",
            {id});
        std::ofstream out(dir_ / (note_name(c["name"]) + ".md"));
        out << "---\nname: " << yaml(c["name"]) << "\ntype: " << yaml(c["type"]) << "\ncolor: " << yaml(c["color"]) << "\ngraphs: [";
        for (size_t i = 0; i < graphs.size(); ++i) out << (i ? ", " : "") << yaml(graphs[i]["name"]);
        out << "]\n---\n" << c["description"].get<std::string>() << "\n";
        if (!links.empty()) {
            out << "\n## Connections\n";
            for (const auto& l : links) out << "- " << l["type"].get<std::string>() << " → [[" << note_name(l["target"]) << "]]\n";
        }
    }
    for (const auto& name : removed)
        if (db.one("SELECT id FROM concepts WHERE name = ?", {name}).is_null()) fs::remove(dir_ / (note_name(name) + ".md"), ec);
    for (const auto& g : db.query("SELECT id, name, description FROM graphs")) {
        std::ofstream out(dir_ / ("Graph - " + note_name(g["name"]) + ".md"));
        out << "---\ngraph: " << yaml(g["name"]) << "\n---\n" << g["description"].get<std::string>() << "\n\n## Concepts\n";
        for (const auto& n : db.query("SELECT c.name FROM instances i JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ? ORDER BY c.name", {g["id"]}))
            out << "- [[" << note_name(n["name"]) << "]]\n";
        for (const auto& f : db.query("SELECT name, members FROM frames WHERE graph_id = ?", {g["id"]}))
            out << "\n## Frame: " << f["name"].get<std::string>() << "\n" << f["members"].get<std::string>() << "\n";
        for (const auto& s : db.query("SELECT title, members FROM storylines WHERE graph_id = ?", {g["id"]}))
            out << "\n## Storyline: " << s["title"].get<std::string>() << "\n" << s["members"].get<std::string>() << "\n";
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
        bool front = false, connections = false;
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
            if (line == "## Connections") {
                connections = true;
                continue;
            }
            if (connections) {
                size_t arrow = line.find(" → [["), close = line.rfind("]]");
                if (line.rfind("- ", 0) == 0 && arrow != std::string::npos && close != std::string::npos && close > arrow)
                    note.links.emplace_back(line.substr(2, arrow - 2), line.substr(arrow + 7, close - arrow - 7));
                continue;
            }
            note.description += (note.description.empty() ? "" : "\n") + line;
        }
        while (!note.description.empty() && note.description.back() == '\n') note.description.pop_back();
        notes.push_back(std::move(note));
    }
    return db.batch([&] {
        std::map<std::string, int64_t> by_note;
        for (const auto& n : notes) {
            json c = db.one("SELECT id, description, type, color FROM concepts WHERE name = ?", {n.name});
            if (c.is_null()) {
                int64_t id = db.insert("concepts", {{"name", n.name}, {"description", n.description}, {"type", n.type}, {"color", n.color}, {"norm", normal_form(n.name)}});
                for (const auto& g : n.graphs) {
                    json graph = db.one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {g});
                    if (graph.is_null()) continue;
                    json far = db.one("SELECT COALESCE(MAX(x), 0) AS x FROM instances WHERE graph_id = ?", {graph["id"]});
                    db.insert("instances", {{"graph_id", graph["id"]}, {"concept_id", id}, {"x", far["x"].get<double>() + 200}, {"y", 0}});
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
        for (const auto& n : notes) {
            for (const auto& [type, target] : n.links) {
                auto s = by_note.find(note_name(n.name)), t = by_note.find(target);
                if (s == by_note.end() || t == by_note.end()) continue;
                // The link lives in the first graph both concepts are in.
                json pair = db.one("SELECT a.id AS a, b.id AS b FROM instances a JOIN instances b ON a.graph_id = b.graph_id "
                                   "WHERE a.concept_id = ? AND b.concept_id = ? ORDER BY a.graph_id LIMIT 1",
                                   {s->second, t->second});
                if (pair.is_null()) continue;
                std::string type_name = title_case(type);
                json type_row = db.one("SELECT id FROM connection_types WHERE name = ? COLLATE NOCASE", {type_name});
                int64_t type_id = type_row.is_null() ? db.insert("connection_types", {{"name", type_name}}) : type_row["id"].get<int64_t>();
                if (!db.one("SELECT id FROM edges WHERE source = ? AND target = ? AND type_id = ?", {pair["a"], pair["b"], type_id}).is_null()) continue;
                db.insert("edges", {{"source", pair["a"]}, {"target", pair["b"]}, {"type_id", type_id}, {"directed", 1}});
                ++linked;
            }
        }
        return json{{"reindexed", true}, {"updated", updated}, {"created", created}, {"linked", linked}};
    });
}

}  // namespace graph
