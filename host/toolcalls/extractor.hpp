// Finds the tool calls in a model's reply when they come as text rather than as native tool_calls:
// every format of shared/reference/toolcall-formats.md (JSON fences, Llama <|python_tag|>, gpt-oss
// harmony, Hermes/Qwen <tool_call>, Qwen3-Coder XML, Mistral [TOOL_CALLS], DeepSeek tokens and DSML,
// Kimi, Functionary, GLM, MiniMax, Gemma, pythonic lists, bare JSON …); the conformance table in
// tests/fixtures/toolcall_conformance.json has one row per format and edge case. Reasoning blocks
// (<think>, [THINK], harmony analysis …) are separated out and never parsed as calls, except the
// calls Kimi-K2-Thinking writes inside its reasoning.
//
// Works incrementally: ToolCallStream::feed() looks at each byte once (plus a bounded look-ahead for
// markers split across deltas), and feeding any split of a text gives the same Extraction as
// extract_tool_calls() on the whole text. Formats and their sources: shared/reference/toolcall-formats.md.
#pragma once

#include "common/result.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::toolcalls {

// The tools a reply may call, with their JSON Schemas (used to type values written as text).
// A default-constructed ToolSet accepts any name and types nothing.
class ToolSet {
public:
    ToolSet();
    ~ToolSet();
    ToolSet(const ToolSet&);
    ToolSet& operator=(const ToolSet&);
    ToolSet(ToolSet&&) noexcept;
    ToolSet& operator=(ToolSet&&) noexcept;

    // From a JSON array of definitions, either OpenAI-shaped ({"type": "function", "function":
    // {"name", "description", "parameters"}}) or canonical ({"name", "description", "parameters"}).
    static Result<ToolSet> from_json(std::string_view definitions_json);
    void add(const std::string& name, const std::string& parameters_schema_json);

    bool offers(std::string_view name) const;  // always true when no list was given
    std::vector<std::string> names() const;

    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    std::shared_ptr<Impl> impl_;
};

struct ExtractedCall {
    std::string name;
    std::string arguments_json;  // always a JSON object
    std::string format;          // where it came from: "hermes", "qwen3_coder_xml", "json", …
};

struct Extraction {
    std::vector<ExtractedCall> calls;  // in the order they were written
    std::string content;               // the text without calls and reasoning
    std::string reasoning;
    // A call was started but is cut off or malformed; it is not in `calls` and is never run.
    bool incomplete = false;
    // Why marked call text was not taken as a call (unknown tool, bad JSON, cut off …), so the
    // model can be told.
    std::vector<std::string> problems;
};

// The text of a reply that is safe to show while it streams.
struct VisibleDelta {
    std::string content;
    std::string reasoning;
};

class ToolCallStream {
public:
    explicit ToolCallStream(ToolSet tools = {});
    ~ToolCallStream();
    ToolCallStream(ToolCallStream&&) noexcept;
    ToolCallStream& operator=(ToolCallStream&&) noexcept;

    // Consumes the next piece of the reply; returns what became displayable (never call markup).
    VisibleDelta feed(std::string_view delta);
    // Ends the reply; what is still open is judged as cut off. The stream is spent afterwards.
    Extraction finish();

private:
    struct State;
    std::unique_ptr<State> state_;
};

Extraction extract_tool_calls(std::string_view text, const ToolSet& tools = {});

}  // namespace agenthost::toolcalls
