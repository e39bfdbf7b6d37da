// Assembles what the model is told besides the conversation, from the base instructions and the
// agent's memory, each section only when it has something to say, in two parts laid out for prompt
// caches: the system prompt, which stays the same through a turn, and the agent's state, which its
// own steps change and which therefore joins the conversation when it changes
// (ContextWindow::note_state).
#pragma once

#include "common/choices.hpp"
#include "memory/agent_memory.hpp"

#include <string>
#include <vector>

namespace agenthost::agent {

inline constexpr size_t kFactQueryBytes = 64 << 10;

struct PromptInputs {
    std::string base;  // configured instructions
    Mode mode = Mode::execute;
    // The user's message, which picks the relevant facts: its first kFactQueryBytes are enough (a
    // view, not a copy: a prompt may be megabytes, and this is built for every model call).
    std::string_view prompt;
    std::string plugin_context;              // text from tool plugins' context hooks
    std::string request_context_json;        // e.g. selected graph nodes, passed in with the request
    std::vector<std::string> notifications;  // events plugins posted since the last turn
    std::string on_demand_tools;             // the tool families load_tools offers (tools/tool_families.hpp)
};

struct PromptParts {
    // The instructions, the mode, long-term facts, the tools' context, the tool families on demand,
    // the request's context and the notifications taken at the run's start: the same every step
    // (unless a fact is remembered), so the requests of a turn share it as a prefix.
    std::string system;
    // The goal, progress notes, plan, task stack, session memory, the open question and recent
    // errors: what a step may change. Empty when there is nothing to say.
    std::string state;
};

PromptParts build_prompt(memory::AgentMemory& memory, std::string_view conversation, const PromptInputs& in);

}  // namespace agenthost::agent
