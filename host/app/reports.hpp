// JSON descriptions shared by the CLI (--json outputs) and the HTTP server.
#pragma once

#include "app/host_app.hpp"

#include <string>

namespace agenthost::app {

// What `agenthost plugins --json` prints and GET /api/plugins returns.
std::string plugins_report(HostApp& app);
// One run: status, mode, provider, counters, stop reason and error code, timings.
std::string run_report(const store::RunRecord& run);
// What `agenthost config` prints: the file in use (or the places searched), every effective
// setting — each plugin's as it receives them (defaults under the operator's table, paths
// resolved) — and the configuration's problems; secrets shown only as "set" / "not set".
std::string config_report(HostApp& app, const std::vector<std::filesystem::path>& searched);
// A provider's whole-request timeout in effect: its own, else its plugin's declared default (0: none declared).
int effective_timeout_ms(HostApp& app, const config::ProviderSettings& provider);

}  // namespace agenthost::app
