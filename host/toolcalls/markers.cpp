#include "toolcalls/markers.hpp"

#include <algorithm>

namespace agenthost::toolcalls::markers {

// Literal markers recognised in content.
const std::vector<Marker>& literal_markers() {
    static const std::vector<Marker> markers{
        {"<think>", Action::reasoning_open, Region::hermes, {"</think>"}},
        {"</think>", Action::reasoning_close},
        {"[THINK]", Action::reasoning_open, Region::hermes, {"[/THINK]"}},
        {"<seed:think>", Action::reasoning_open, Region::hermes, {"</seed:think>"}},
        {"<tool_call>", Action::region_open, Region::hermes, {"</tool_call>"}},
        {"<seed:tool_call>", Action::region_open, Region::hermes, {"</seed:tool_call>"}},
        {"<function=", Action::region_open, Region::function_tag, {"</function>"}},
        {"<function name=", Action::region_open, Region::function_tag, {"</function>"}},
        {"<TOOLCALL>", Action::region_open, Region::call_list, {"</TOOLCALL>"}},
        {"<tool_calls>", Action::region_open, Region::call_list, {"</tool_calls>"}},
        {"<function_calls>", Action::region_open, Region::pythonic_lines, {"</function_calls>"}},
        {"<minimax:tool_call>", Action::region_open, Region::invoke_xml, {"</minimax:tool_call>"}},
        // DeepSeek V3.2 (function_calls) and V4 (tool_calls) DSML, fullwidth and ASCII bars.
        {"<\xEF\xBD\x9C"
         "DSML\xEF\xBD\x9C"
         "function_calls>",
         Action::region_open,
         Region::dsml,
         {"</\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          "function_calls>"}},
        {"<\xEF\xBD\x9C"
         "DSML\xEF\xBD\x9C"
         "tool_calls>",
         Action::region_open,
         Region::dsml,
         {"</\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          "tool_calls>"}},
        {"<|DSML|function_calls>", Action::region_open, Region::dsml, {"</|DSML|function_calls>"}},
        {"<|DSML|tool_calls>", Action::region_open, Region::dsml, {"</|DSML|tool_calls>"}},
        {">>>", Action::region_open, Region::functionary, {">>>"}},  // Functionary v3.2: up to the next recipient
        {"<start_function_call>", Action::region_open, Region::gemma_call, {"<end_function_call>"}},  // FunctionGemma
        {"<|tool_call>", Action::region_open, Region::gemma_call, {"<tool_call|>"}},                  // Gemma 4
        {"[TOOL_CALLS]", Action::region_open, Region::mistral, {"[/TOOL_CALLS]"}},
        {"```", Action::fence_open},
    };
    return markers;
}

const FirstBytes& content_first_bytes() {
    static const FirstBytes table = [] {
        FirstBytes t{};
        for (const Marker& m : literal_markers())
            if (!m.text.empty()) t[static_cast<unsigned char>(m.text[0])] = true;
        return t;
    }();
    return table;
}

// Bytes that are content as they stand when nothing is pending: no marker, special token or JSON
// candidate begins with them.
const FirstBytes& plain_content_bytes() {
    static const FirstBytes table = [] {
        FirstBytes t;
        t.fill(true);
        for (size_t i = 0; i < t.size(); ++i)
            if (content_first_bytes()[i]) t[i] = false;
        for (unsigned char c : {'<', '{', '['}) t[c] = false;
        return t;
    }();
    return table;
}

// Special tokens recognised in content, by normalised name.
const std::vector<Marker>& token_markers() {
    static const std::vector<Marker> markers{
        {"python_tag", Action::region_open, Region::python_tag, {"eom_id", "eot_id"}, true},
        {"tool_calls_begin", Action::region_open, Region::special_tokens, {"tool_calls_end"}, true},
        {"tool_calls", Action::region_open, Region::special_tokens, {"tool_calls_end"}, true},
        {"tool_call_begin", Action::region_open, Region::special_tokens, {"tool_calls_end"}, true},
        {"tool_calls_section_begin", Action::region_open, Region::special_tokens, {"tool_calls_section_end"}, true},
        {"tool_call", Action::region_open, Region::call_list, {}, true},
        {"START_ACTION", Action::region_open, Region::call_list, {"END_ACTION"}, true},
        {"python_start", Action::region_open, Region::call_list, {"python_end"}, true},
        {"tool_call_start", Action::region_open, Region::call_list, {"tool_call_end"}, true},
        {"tools_prefix", Action::region_open, Region::call_list, {"tools_suffix"}, true},  // Apertus
        {"action_start", Action::region_open, Region::call_list, {"action_end"}, true},    // InternLM2
        {"START_THINKING", Action::reasoning_open, Region::hermes, {"END_THINKING"}, true},
        {"inner_prefix", Action::reasoning_open, Region::hermes, {"inner_suffix"}, true},
        {"channel", Action::harmony_header},
        {"start", Action::harmony_header},
    };
    return markers;
}

bool is_dropped_token(std::string_view name) {
    static const std::vector<std::string_view> names{"eot_id",     "eom_id",    "end",         "return",         "call",
                                                     "im_end",     "endoftext", "end_of_text", "START_RESPONSE", "END_RESPONSE",
                                                     "START_TEXT", "END_TEXT",  "message",     "constrain",      "tools_suffix"};
    return std::find(names.begin(), names.end(), name) != names.end();
}

const Marker& marker_for_token(std::string_view name) {
    for (const Marker& m : token_markers())
        if (m.text == name) return m;
    return token_markers().front();
}

}  // namespace agenthost::toolcalls::markers
