#include "tools/result_marker.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::tools {

ResultMarker result_marker(const nlohmann::json& result) {
    return choice_from<ResultMarker>(kResultMarkers, json_io::get_string(result, "marker")).value_or(ResultMarker::none);
}

}  // namespace agenthost::tools
