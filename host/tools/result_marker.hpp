// A tool result's "marker" (agenthost.h, THE TOOL RESULT): what the loop does after the call beyond
// showing its result. Plugins write the word; the loop reads it once, here, as a typed value.
#pragma once

#include "common/choices.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string_view>

namespace agenthost::tools {

enum class ResultMarker {
    none,                // no marker, or one this host does not know: the result is just a result
    done,                // "done": the turn ends; "summary" is its answer
    plan_created,        // "plan_created": "plan" {"steps": […]} becomes the task list
    approval_requested,  // "approval_requested": the user is asked ("reason"), then the call runs again
};

inline constexpr Choice<ResultMarker> kResultMarkers[] = {
    {ResultMarker::done, "done", "the turn ends"},
    {ResultMarker::plan_created, "plan_created", "the steps become the task list"},
    {ResultMarker::approval_requested, "approval_requested", "the user is asked, then the call runs again"},
};

// The marker's word as plugins write it.
inline std::string_view marker_word(ResultMarker marker) { return choice_name<ResultMarker>(kResultMarkers, marker); }

// The marker a result carries.
ResultMarker result_marker(const nlohmann::json& result);

}  // namespace agenthost::tools
