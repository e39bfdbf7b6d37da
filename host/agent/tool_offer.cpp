#include "agent/tool_offer.hpp"

#include "common/bounded_json.hpp"
#include "tools/tool_families.hpp"

#include <algorithm>
#include <utility>

namespace agenthost::agent {

using nlohmann::json;

void ToolOffer::follow_registry() {
    auto now = catalogue_.registry().tools();
    if (now == snapshot_) return;
    snapshot_ = std::move(now);
    forget_offer();
    known_.reset();
}

void ToolOffer::forget_offer() {
    offered_.reset();
    offered_text_.reset();
    offered_mode_.reset();
}

const json& ToolOffer::offered(std::string_view conversation, tools::Mode mode) {
    follow_registry();
    if (offered_ && offered_mode_ == mode) return *offered_;
    auto waiting = find_held(conversation);
    if (!on_demand_text_) on_demand_text_ = tools::describe_families(waiting);
    if (!held_.empty()) load_tools_offered_ = true;
    std::vector<std::pair<size_t, json>> placed;
    for (const tools::Tool& t : catalogue_.all()) {
        if (!tools::offered(t, mode) || (t.source == tools::Tool::Source::plugin && held_.count(t.plugin))) continue;
        if (t.source == tools::Tool::Source::builtin && t.name == tools::kLoadToolsName && !load_tools_offered_) continue;
        placed.emplace_back(
            place_of(t.name),
            json{{"name", t.name}, {"description", t.description}, {"parameters", json::parse(t.input_schema_json)}});
    }
    std::stable_sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    json tools = json::array();
    for (auto& [place, tool] : placed) tools.push_back(std::move(tool));
    offered_text_.reset();
    offered_mode_ = mode;
    return *(offered_ = std::move(tools));
}

std::vector<tools::ToolFamily> ToolOffer::find_held(std::string_view conversation) {
    auto waiting = tools::on_demand_families(catalogue_, memory_, conversation, on_demand_threshold_);
    held_.clear();
    for (const auto& f : waiting) held_.insert(f.plugin);
    return waiting;
}

size_t ToolOffer::place_of(const std::string& tool) {
    auto it = std::find(order_.begin(), order_.end(), tool);
    if (it != order_.end()) return static_cast<size_t>(it - order_.begin());
    order_.push_back(tool);
    return order_.size() - 1;
}

const std::string& ToolOffer::offered_text(std::string_view conversation, tools::Mode mode) {
    const json& tools = offered(conversation, mode);  // follows the registry first
    if (!offered_text_) offered_text_ = json_io::dump(tools);
    return *offered_text_;
}

const std::string& ToolOffer::on_demand_text(std::string_view conversation, tools::Mode mode) {
    offered(conversation, mode);  // builds the text with the first offer
    return *on_demand_text_;
}

const ToolSet& ToolOffer::known() {
    follow_registry();
    if (known_) return *known_;
    ToolSet set;
    for (const tools::Tool& t : catalogue_.all()) set.add(t.name, t.input_schema_json);
    return *(known_ = std::move(set));
}

void ToolOffer::note_use(const tools::Tool& tool, std::string_view conversation) {
    bool changed = tool.source == tools::Tool::Source::builtin && tool.name == tools::kLoadToolsName;
    // A resumed run's first call (an approved one) runs before its turn offered anything: which
    // families wait is not known yet.
    if (tool.source == tools::Tool::Source::plugin && !offered_) find_held(conversation);
    // Only a family still held is read and written: a call of an offered tool costs nothing here.
    if (tool.source == tools::Tool::Source::plugin && held_.count(tool.plugin)) {
        auto loaded = tools::load_family(memory_, conversation, tool.plugin);
        changed = loaded && *loaded;
    }
    if (changed) forget_offer();
}

}  // namespace agenthost::agent
