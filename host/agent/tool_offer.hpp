// The tools a turn offers the model, and every tool it recognises in a reply, cached while the
// registry's snapshot stays the same (a plugin's tools_changed or a disabled plugin rebuilds
// them). The offer is the mode's tools but for the families offered on demand that the
// conversation has not loaded yet (tools/tool_families.hpp): those are described in the system
// prompt instead (as they were at the turn's first request: the system prompt stays the same
// through a turn), and load_tools is offered once there are some, to the end of the turn.
// Through a turn each tool keeps the place it was first offered at, a family loaded mid-turn going
// last: the tool schemas open every request, and a prompt cache serves only an unchanged start.
#pragma once

#include "toolcalls/extractor.hpp"
#include "memory/agent_memory.hpp"
#include "tools/catalogue.hpp"
#include "tools/tool_families.hpp"
#include "tools/policy.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace agenthost::agent {

using toolcalls::ToolSet;

class ToolOffer {
public:
    // `on_demand_threshold`: [agent] on_demand_tools, a family of more tools than this is offered on demand.
    ToolOffer(const tools::Catalogue& catalogue, memory::AgentMemory& memory, int on_demand_threshold)
        : catalogue_(catalogue), memory_(memory), on_demand_threshold_(on_demand_threshold) {}

    // The offered tools as the request's "tools" array, and as that array's JSON text (serialised once).
    const nlohmann::json& offered(std::string_view conversation, tools::Mode mode);
    const std::string& offered_text(std::string_view conversation, tools::Mode mode);
    // The families on demand at the turn's first request, described for the system prompt ("" when none).
    const std::string& on_demand_text(std::string_view conversation, tools::Mode mode);
    // Every tool the model could name, offered or not, so a call the mode forbids is still recognised.
    const ToolSet& known();
    // A call of `tool` ran: load_tools, or a tool of a family still held, loads that family, so the
    // next request offers it.
    void note_use(const tools::Tool& tool, std::string_view conversation);

private:
    void follow_registry();
    void forget_offer();
    // Which families of `conversation` wait to be loaded now (held_), described.
    std::vector<tools::ToolFamily> find_held(std::string_view conversation);
    size_t place_of(const std::string& tool);  // its place in order_, given at its first offer

    const tools::Catalogue& catalogue_;
    memory::AgentMemory& memory_;
    const int on_demand_threshold_;
    std::shared_ptr<const std::vector<plugins::ToolInfo>> snapshot_;  // what the caches were built from
    std::optional<tools::Mode> offered_mode_;                         // the mode the offer was built for
    std::optional<nlohmann::json> offered_;
    std::optional<std::string> offered_text_;
    std::optional<std::string> on_demand_text_;  // built with the turn's first offer …
    std::set<std::string> held_;                 // … and the held families' plugin names
    std::optional<ToolSet> known_;
    std::vector<std::string> order_;   // every tool offered in this turn, in the order first offered
    bool load_tools_offered_ = false;  // once offered, kept: dropping it would change the schemas' start
};

}  // namespace agenthost::agent
