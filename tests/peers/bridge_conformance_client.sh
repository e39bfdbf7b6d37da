#!/bin/sh
# The mcp-bridge as the client under test of @modelcontextprotocol/conformance's client scenarios.
# The suite runs this command with its test server's URL appended and the scenario's name in
# $MCP_CONFORMANCE_SCENARIO; each scenario is one agenthost command against that server:
#   conformance client --command "sh bridge_conformance_client.sh AGENTHOST PLUGIN_DIR WORK_DIR" --scenario NAME
# The OAuth scenarios (auth/*) do not apply: the bridge sends the headers its config names.
set -eu
agenthost=$1 plugin_dir=$2 work=$3 url=$4
mkdir -p "$work"
config="$work/agenthost.toml"
cat > "$config" <<TOML
data_dir = "$work/data"
default_plugin_dirs = false
enabled_plugins = ["scripted", "mcp_bridge"]
plugin_dirs = ["$plugin_dir"]
[plugins.mcp_bridge]
servers = [{ name = "suite", url = "$url", timeout_ms = 20000 }]
TOML
run() { exec "$agenthost" --config "$config" "$@"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) run tools ;;
  tools_call) run tool suite__add_numbers '{"a": 2, "b": 3}' ;;
  # Nobody is at a terminal here: --yes takes the question's defaults, as a person pressing Enter would.
  elicitation-sep1034-client-defaults) run tool suite__test_client_elicitation_defaults --yes ;;
  sse-retry) run tool suite__test_reconnection ;;
  *) echo "the scenario '${MCP_CONFORMANCE_SCENARIO:-}' does not apply to the bridge" >&2; exit 2 ;;
esac
