#include "spec.hpp"

#include "fuzzy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace graph {
namespace {

int64_t cell_key(double x, double y) {
    auto cx = static_cast<int64_t>(std::floor(x / kSpacing)), cy = static_cast<int64_t>(std::floor(y / kSpacing));
    return (cx << 32) ^ (cy & 0xffffffff);
}

// Names by normal form, by compact form and bucketed by first letter, for fast near-duplicate search.
struct NameIndex {
    struct Entry {
        std::string key;  // "c<id>" an existing concept, "r<n>" one of this batch
        std::string name, norm;
        bool preferred = false;  // already in the target graph
        std::string type, description;
        double score = 0;  // set by match(): how close the name was
    };
    // What a node of a spec is looked up as.
    struct Wanted {
        const std::string& name;
        const std::string& norm;
        const std::string& type;
    };
    std::unordered_map<std::string, std::vector<Entry>> by_norm, by_compact;
    std::unordered_map<char, std::vector<Entry>> by_initial;

    void add(Entry e) {
        by_initial[e.norm.empty() ? ' ' : e.norm[0]].push_back(e);
        if (std::string compact = compact_form(e.name); !compact.empty()) by_compact[compact].push_back(e);
        by_norm[e.norm].push_back(std::move(e));
    }

    // The closest entry (preferring entries already in the graph) that is close enough and that
    // nothing keeps apart (fuzzy.hpp's kept_apart: types, given names). `apart` receives the words
    // of the closest entry that was kept apart, when that is why nothing matched.
    std::optional<Entry> match(const Wanted& wanted, double threshold, std::string* apart = nullptr) const {
        std::vector<Entry> candidates;
        auto add_all = [&](const std::vector<Entry>& entries, double score) {
            for (Entry e : entries) {
                e.score = score + (e.preferred ? 0.001 : 0);
                candidates.push_back(std::move(e));
            }
        };
        // The best candidate nothing keeps apart; the closest kept apart is said when none is left.
        auto best = [&]() -> std::optional<Entry> {
            std::stable_sort(candidates.begin(), candidates.end(),
                             [](const Entry& a, const Entry& b) { return a.score > b.score; });
            for (auto& e : candidates) {
                if (auto why = kept_apart(wanted.name, wanted.type, e.name, e.type)) {
                    if (apart && apart->empty()) *apart = *why;
                    continue;
                }
                e.score = std::min(e.score, 1.0);
                return e;
            }
            candidates.clear();
            return std::nullopt;
        };
        // The same name (as normalised, or but for punctuation) first: no edit distance needed.
        if (auto it = by_norm.find(wanted.norm); it != by_norm.end()) add_all(it->second, 1.0);
        if (auto it = by_compact.find(compact_form(wanted.name)); it != by_compact.end()) add_all(it->second, 1.0);
        if (auto same = best()) return same;
        if (auto bucket = by_initial.find(wanted.norm.empty() ? ' ' : wanted.norm[0]); bucket != by_initial.end())
            for (const auto& e : bucket->second) {
                double longest = static_cast<double>(std::max(e.norm.size(), wanted.norm.size()));
                if (std::fabs(static_cast<double>(e.norm.size()) - static_cast<double>(wanted.norm.size())) >
                    (1 - threshold) * longest + 1)
                    continue;
                if (double score = similarity_of_normal(wanted.norm, e.norm); score >= threshold) add_all({e}, score);
            }
        return best();
    }
};

// How a reused node's name matched, in words for the summary.
std::string why_matched(const std::string& name, const NameIndex::Entry& found) {
    if (exact_form(name) == exact_form(found.name)) return "the same name";
    if (normal_form(name) == found.norm) return "the same name but for case, word order or a leading 'the'";
    if (compact_form(name) == compact_form(found.name)) return "the same name, written with other punctuation or spacing";
    char score[16];
    std::snprintf(score, sizeof score, "%.2f", found.score);
    return std::string("a close spelling (similarity ") + score + ")";
}

// A node of the spec that is an existing one: how it matched, and its new information kept. What
// the existing node lacks (a description, a type) is added by an update op; what differs is said,
// never dropped in silence.
json reuse_of(const NameIndex::Entry& found, const std::string& name, const std::string& type, const std::string& description,
              bool by_name, Plan& plan) {
    json reuse{{"name", name},
               {"matched", found.name},
               {"already_in_graph", found.preferred},
               {"why", by_name ? why_matched(name, found) : std::string("the spec says it is the same (same_as)")}};
    json fields = json::object(), kept = json::array();
    if (!description.empty() && found.description.empty())
        fields["description"] = description;
    else if (!description.empty() && description != found.description)
        kept.push_back("its own description (the spec's differs; update_node replaces it)");
    if (!type.empty() && found.type.empty())
        fields["type"] = type;
    else if (!type.empty() && normal_form(type) != normal_form(found.type))
        kept.push_back("its type " + found.type + " (the spec said " + type + "; update_node changes it)");
    if (!fields.empty()) {
        json added = json::array();
        for (const auto& [key, value] : fields.items()) added.push_back(key);
        reuse["added"] = added;
        plan.ops.push_back({{"op", "update_concept"}, {"concept_id", std::stoll(found.key.substr(1))}, {"fields", fields}});
    }
    if (!kept.empty()) reuse["kept"] = kept;
    return reuse;
}

}  // namespace

Placer::Placer(GraphDb& db, int64_t graph_id) {
    for (const auto& i : db.query("SELECT x, y FROM instances WHERE graph_id = ?", {graph_id}))
        taken_.emplace_back(i["x"], i["y"]);
    for (size_t k = 0; k < taken_.size(); ++k) grid_[cell_key(taken_[k].first, taken_[k].second)].push_back(k);
}

bool Placer::free(double x, double y) const {
    auto cx = static_cast<int64_t>(std::floor(x / kSpacing)), cy = static_cast<int64_t>(std::floor(y / kSpacing));
    for (int64_t dx = -1; dx <= 1; ++dx)
        for (int64_t dy = -1; dy <= 1; ++dy) {
            int64_t key = ((cx + dx) << 32) ^ ((cy + dy) & 0xffffffff);
            auto it = grid_.find(key);
            if (it == grid_.end()) continue;
            for (size_t k : it->second)
                if (std::hypot(taken_[k].first - x, taken_[k].second - y) < kSpacing) return false;
        }
    return true;
}

std::pair<double, double> Placer::place(const std::vector<std::pair<double, double>>& anchors) {
    double ax = 0, ay = 0;
    if (!anchors.empty()) {
        for (const auto& [x, y] : anchors) {
            ax += x;
            ay += y;
        }
        ax /= static_cast<double>(anchors.size());
        ay /= static_cast<double>(anchors.size());
    } else if (!taken_.empty()) {  // unconnected: beside the drawing, to its right
        double right = taken_.front().first, top = taken_.front().second;
        for (const auto& [x, y] : taken_) {
            right = std::max(right, x);
            top = std::min(top, y);
        }
        ax = right + kSpacing * 2;
        ay = top;
    }
    std::pair<double, double> spot{ax, ay};
    bool found = anchors.empty() && free(ax, ay);
    for (int ring = 1; !found; ++ring) {  // rings of growing radius, fixed angles: deterministic
        int steps = 6 * ring;
        for (int s = 0; s < steps && !found; ++s) {
            double angle = 2 * M_PI * s / steps;
            double x = std::round(ax + ring * kSpacing * std::cos(angle)), y = std::round(ay + ring * kSpacing * std::sin(angle));
            if (free(x, y)) {
                spot = {x, y};
                found = true;
            }
        }
    }
    grid_[cell_key(spot.first, spot.second)].push_back(taken_.size());
    taken_.push_back(spot);
    return spot;
}

Plan execute(GraphDb& db, const json& spec, int64_t active_graph, const SpecSettings& settings, std::string& error) {
    Plan plan;
    std::string wanted = spec.value("graph", json::object()).value("name", "");
    json graph;
    if (wanted.empty()) {
        graph = db.one("SELECT id, name FROM graphs WHERE id = ?", {active_graph});
        if (graph.is_null()) {
            error = "there is no active graph: create_graph makes one, or name an existing graph in spec.graph.name";
            return plan;
        }
    } else {
        graph = db.one("SELECT id, name FROM graphs WHERE name = ? COLLATE NOCASE", {wanted});
        if (graph.is_null())
            for (const auto& g : db.query("SELECT id, name FROM graphs"))
                if (similarity(wanted, g["name"]) >= settings.dedup_threshold) graph = g;
        if (graph.is_null()) {
            std::string names;
            for (const auto& g : db.query("SELECT name FROM graphs ORDER BY name"))
                names += (names.empty() ? "" : ", ") + g["name"].get<std::string>();
            error = "there is no graph named '" + wanted + "' (graphs: " + (names.empty() ? "none yet" : names) +
                    "); create_graph first, or use one of these";
            return plan;
        }
    }
    plan.graph_id = graph["id"];
    plan.graph_name = graph["name"];

    std::set<int64_t> in_graph;
    for (const auto& i : db.query("SELECT concept_id FROM instances WHERE graph_id = ?", {plan.graph_id}))
        in_graph.insert(i["concept_id"].get<int64_t>());
    NameIndex existing;
    std::set<std::string> existing_names;  // exact forms: a node kept apart from its namesake needs another name
    for (const auto& c : db.query("SELECT id, name, norm, type, description FROM concepts")) {
        int64_t id = c["id"];
        existing_names.insert(exact_form(c["name"]));
        existing.add({"c" + std::to_string(id), c["name"], c["norm"], in_graph.count(id) > 0, c["type"], c["description"]});
    }
    Placer placer(db, plan.graph_id);
    std::map<std::string, json> instance_pos;  // key → {x, y}: "i<id>" existing instance, "r<ref>" new
    for (const auto& i : db.query("SELECT id, concept_id, x, y FROM instances WHERE graph_id = ?", {plan.graph_id}))
        instance_pos["c" + std::to_string(i["concept_id"].get<int64_t>())] = {
            {"instance", i["id"]}, {"x", i["x"]}, {"y", i["y"]}};

    // Colours by type: those already used in the graph, then the palette in order.
    std::map<std::string, std::string> type_colors;
    for (const auto& row : db.query("SELECT c.type, c.color FROM concepts c JOIN instances i ON i.concept_id = c.id WHERE "
                                    "i.graph_id = ? AND c.color != ''",
                                    {plan.graph_id}))
        type_colors.emplace(row["type"].get<std::string>(), row["color"].get<std::string>());
    auto color_for = [&](const std::string& type) {
        if (auto it = type_colors.find(type); it != type_colors.end()) return it->second;
        std::string c = settings.palette[type_colors.size() % settings.palette.size()];
        type_colors[type] = c;
        return c;
    };

    // Nodes: the batch's own near-duplicates merge; existing concepts are reused.
    NameIndex batch;
    std::vector<json> new_nodes;  // key (+ concept id), for layout after edges are known
    size_t refs = 0;
    for (const auto& n : spec.value("nodes", json::array())) {
        std::string name = n.is_object() ? n.value("name", "") : "";
        if (name.empty()) {
            plan.problems.push_back("a node has no name: " + n.dump());
            continue;
        }
        if (name.size() > settings.max_name)
            plan.problems.push_back("the node name '" + name.substr(0, 40) + "…' is longer than " +
                                    std::to_string(settings.max_name));
        const std::string norm = normal_form(name), type = n.value("type", ""), description = n.value("description", "");
        const std::string same_as = n.value("same_as", "");
        const NameIndex::Wanted wanted{name, norm, type};
        if (auto same = batch.match(wanted, settings.dedup_threshold)) {
            plan.skipped.push_back({{"name", name}, {"why", "the same as '" + same->name + "' in this batch"}});
            continue;
        }
        std::string apart;  // why the closest existing node is another thing, when it is
        std::optional<NameIndex::Entry> found;
        if (!same_as.empty()) {  // the spec says which node this is: no type or given-name rule
            const std::string same_norm = normal_form(same_as);
            found = existing.match({same_as, same_norm, ""}, settings.dedup_threshold);
            if (!found) {
                plan.problems.push_back("node '" + name + "': same_as '" + same_as + "' names no node there is");
                continue;
            }
        } else {
            found = existing.match(wanted, settings.dedup_threshold, &apart);
        }
        bool kept_apart_before = false;
        if (!found && !apart.empty() && !type.empty()) {
            // Kept apart once already: its node is "Mercury (Element)", and this is it again.
            const std::string typed_name = name + " (" + type + ")", typed_norm = normal_form(typed_name);
            std::string ignored;
            found = existing.match({typed_name, typed_norm, type}, settings.dedup_threshold, &ignored);
            kept_apart_before = found.has_value();
        }
        if (found) {
            batch.add({found->key, found->name, norm, false, found->type, found->description});
            plan.reused.push_back(reuse_of(*found, name, type, description, same_as.empty(), plan));
            if (kept_apart_before)
                plan.reused.back()["why"] = "the node of that name and type, kept apart from its namesake '" + name + "' before";
            if (!found->preferred) new_nodes.push_back({{"key", found->key}, {"concept_id", std::stoll(found->key.substr(1))}});
            continue;
        }
        // Kept apart from a namesake ("Mercury" the Planet, now the Element): the new node gets its
        // type in its name, so both have a note of their own and neither link is ambiguous.
        // No two concepts share a name (each has one note, and links name it): "(Type 2)" if need be.
        std::string new_name = name;
        if (existing_names.count(exact_form(name))) {
            new_name = type.empty() ? name + " (2)" : name + " (" + type + ")";
            for (int n = 2; existing_names.count(exact_form(new_name)); ++n)
                new_name = name + " (" + (type.empty() ? "" : type + " ") + std::to_string(n) + ")";
        }
        existing_names.insert(exact_form(new_name));
        if (!apart.empty()) plan.kept_apart.push_back({{"name", new_name}, {"why", apart}});
        std::string ref = "r" + std::to_string(refs++);
        batch.add({ref, new_name, norm, false, type, description});
        plan.ops.push_back({{"op", "create_concept"},
                            {"ref", ref},
                            {"name", new_name},
                            {"description", description},
                            {"type", type},
                            {"color", n.value("color", color_for(type))},
                            {"norm", normal_form(new_name)}});
        plan.created.push_back(new_name);
        new_nodes.push_back({{"key", ref}});
    }

    // Edges: endpoints among the batch, else existing concepts of the graph (fuzzy).
    std::map<std::string, std::string> types;  // normalised name → "t<id>" or "tr<name>"
    for (const auto& t : db.query("SELECT id, name FROM connection_types"))
        types[t["name"].get<std::string>()] = "t" + std::to_string(t["id"].get<int64_t>());
    auto resolve = [&](const std::string& name) -> std::optional<std::string> {
        const std::string norm = normal_form(name), no_type;
        std::optional<NameIndex::Entry> found = batch.match({name, norm, no_type}, settings.dedup_threshold);
        if (!found)
            if (auto e = existing.match({name, norm, no_type}, settings.dedup_threshold); e && e->preferred) found = e;
        if (!found) return std::nullopt;
        plan.names[found->key] = found->name;  // the auditor speaks in names, never in keys
        return found->key;
    };
    std::map<std::string, std::vector<std::string>> neighbours;
    json edges = json::array();
    for (const auto& e : spec.value("edges", json::array())) {
        std::string s = e.value("source", ""), t = e.value("target", ""), type = title_case(e.value("type", "Related To"));
        auto source = resolve(s), target = resolve(t);
        if (!source || !target) {
            plan.problems.push_back("edge '" + s + "' → '" + t + "': '" + (!source ? s : t) +
                                    "' is neither in this batch nor in graph '" + plan.graph_name + "'");
            continue;
        }
        if (type.empty()) type = "Related To";
        std::string type_key;
        for (const auto& [existing, key] : types)
            if (normal_form(existing) == normal_form(type)) type_key = key;
        if (type_key.empty()) {
            type_key = "tr" + type;
            types[type] = type_key;
            plan.ops.push_back({{"op", "create_type"}, {"ref", type_key}, {"name", type}});
        }
        // An edge that is there already is skipped like a node that is there: sending a spec again
        // changes nothing and says so.
        if ((*source)[0] == 'c' && (*target)[0] == 'c' && type_key[0] == 't' && type_key[1] != 'r') {
            json there = db.one(
                "SELECT e.id FROM edges e JOIN instances a ON a.id = e.source JOIN instances b ON b.id = e.target "
                "WHERE a.concept_id = ? AND b.concept_id = ? AND a.graph_id = ? AND b.graph_id = ? AND e.type_id = ?",
                {std::stoll(source->substr(1)), std::stoll(target->substr(1)), plan.graph_id, plan.graph_id,
                 std::stoll(type_key.substr(1))});
            if (!there.is_null()) {
                plan.skipped.push_back({{"name", s + " → " + t}, {"why", "that " + type + " edge is already there"}});
                continue;
            }
        }
        edges.push_back({{"source", *source},
                         {"target", *target},
                         {"type", type_key},
                         {"type_name", type},
                         {"directed", e.value("directed", true)},
                         {"names", s + " → " + t}});
        neighbours[*source].push_back(*target);
        neighbours[*target].push_back(*source);
    }

    // Layout: new instances near what they connect to, placed in batch order (deterministic).
    for (const auto& n : new_nodes) {
        std::string key = n["key"];
        std::vector<std::pair<double, double>> anchors;
        for (const auto& other : neighbours[key])
            if (auto it = instance_pos.find(other); it != instance_pos.end())
                anchors.emplace_back(it->second["x"], it->second["y"]);
        auto [x, y] = placer.place(anchors);
        instance_pos[key] = {{"x", x}, {"y", y}};
        json op{{"op", "add_instance"}, {"key", key}, {"x", x}, {"y", y}};
        if (n.contains("concept_id")) op["concept_id"] = n["concept_id"];
        plan.ops.push_back(op);
    }
    for (auto& e : edges) {
        plan.ops.push_back({{"op", "create_edge"},
                            {"source", e["source"]},
                            {"target", e["target"]},
                            {"type", e["type"]},
                            {"directed", e["directed"]}});
        plan.linked.push_back({{"edge", e["names"]}, {"type", e["type_name"]}});
    }
    return plan;
}

std::vector<std::string> audit(const Plan& plan, const SpecSettings& settings) {
    std::vector<std::string> violations = plan.problems;
    size_t nodes = 0, edges = 0;
    std::set<std::string> seen;
    for (const auto& op : plan.ops) {
        if (op["op"] == "create_concept") ++nodes;
        if (op["op"] != "create_edge") continue;
        ++edges;
        std::string s = op["source"], t = op["target"], type = op["type"];
        auto name = [&](const std::string& key) {
            auto it = plan.names.find(key);
            return it == plan.names.end() ? key : it->second;
        };
        if (s == t && !settings.allow_self_edges)
            violations.push_back("an edge from a node to itself (" + name(s) + ") is not allowed");
        if (!seen.insert(s + "|" + t + "|" + type).second)
            violations.push_back("the same edge is given twice (" + name(s) + " → " + name(t) + ")");
    }
    if (nodes > settings.max_nodes)
        violations.push_back(std::to_string(nodes) + " new nodes is more than the limit of " +
                             std::to_string(settings.max_nodes));
    if (edges > settings.max_edges)
        violations.push_back(std::to_string(edges) + " edges is more than the limit of " + std::to_string(settings.max_edges));
    return violations;
}

json commit(GraphDb& db, const Plan& plan) {
    return db.batch([&] {
        std::map<std::string, int64_t> concept_of, instance_of, type_of;
        for (const auto& i : db.query("SELECT id, concept_id FROM instances WHERE graph_id = ?", {plan.graph_id}))
            instance_of["c" + std::to_string(i["concept_id"].get<int64_t>())] = i["id"];
        for (const auto& op : plan.ops) {
            std::string kind = op["op"];
            if (kind == "create_concept") {
                concept_of[op["ref"]] = db.insert("concepts", {{"name", op["name"]},
                                                               {"description", op["description"]},
                                                               {"color", op["color"]},
                                                               {"type", op["type"]},
                                                               {"norm", op["norm"]}});
            } else if (kind == "update_concept") {  // new information for a node that was there
                db.update("concepts", op["concept_id"].get<int64_t>(), op["fields"]);
            } else if (kind == "create_type") {
                type_of[op["ref"]] = db.insert("connection_types", {{"name", op["name"]}});
            } else if (kind == "add_instance") {
                std::string key = op["key"];
                int64_t concept_id = op.contains("concept_id") ? op["concept_id"].get<int64_t>() : concept_of.at(key);
                instance_of[key] = db.insert(
                    "instances", {{"graph_id", plan.graph_id}, {"concept_id", concept_id}, {"x", op["x"]}, {"y", op["y"]}});
            } else if (kind == "create_edge") {
                std::string type = op["type"];
                int64_t type_id = type.rfind("tr", 0) == 0 ? type_of.at(type) : std::stoll(type.substr(1));
                db.insert("edges", {{"source", instance_of.at(op["source"])},
                                    {"target", instance_of.at(op["target"])},
                                    {"type_id", type_id},
                                    {"directed", op["directed"].get<bool>() ? 1 : 0}});
            }
        }
        return json{{"change", "apply_graph_spec"}, {"graph", plan.graph_name}, {"created", plan.created},
                    {"reused", plan.reused},        {"linked", plan.linked},    {"skipped", plan.skipped},
                    {"kept_apart", plan.kept_apart}};
    });
}

}  // namespace graph
