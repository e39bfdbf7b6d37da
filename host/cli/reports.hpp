// JSON descriptions shared by the CLI (--json outputs) and the HTTP server.
#pragma once

#include "cli/host_app.hpp"

#include <string>

namespace agenthost::cli {

// What `agenthost plugins --json` prints and GET /api/plugins returns.
std::string plugins_report(HostApp& app);
// One run: status, mode, provider, counters, stop reason and error code, timings.
std::string run_report(const store::RunRecord& run);

}  // namespace agenthost::cli
