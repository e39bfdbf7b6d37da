#include "tools/result_marker.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

#include <utility>

namespace agenthost::tools {

namespace {

constexpr std::pair<ResultMarker, std::string_view> kMarkers[] = {
    {ResultMarker::done, "done"},
    {ResultMarker::plan_created, "plan_created"},
    {ResultMarker::approval_requested, "approval_requested"},
};

}  // namespace

std::string_view marker_word(ResultMarker marker) {
    for (const auto& [m, word] : kMarkers)
        if (m == marker) return word;
    return "";
}

ResultMarker result_marker(const nlohmann::json& result) {
    const std::string word = json_io::get_string(result, "marker");
    for (const auto& [m, w] : kMarkers)
        if (w == word) return m;
    return ResultMarker::none;
}

}  // namespace agenthost::tools
