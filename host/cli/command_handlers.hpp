// The handlers of the agenthost commands, one file per family; commands.cpp holds the table that
// names them (and serve, mcp and config, a few lines each). Internal to cli/.
//   run_commands.cpp      run, resume, approve / reject (and the turn options chat shares)
//   history_commands.cpp  runs, conversations, show, compact
//   plugin_commands.cpp   plugins, tools, tool, parse-toolcalls
//   doctor.cpp            doctor
//   completion.cpp        completion (bash, zsh, fish, the man page)
#pragma once

#include "cli/commands.hpp"
#include "cli/turn_printer.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace agenthost::cli {

int cmd_run(Context& ctx);
int cmd_resume(Context& ctx);
int cmd_decide(Context& ctx);  // approve and reject
int cmd_runs(Context& ctx);
int cmd_conversations(Context& ctx);
int cmd_show(Context& ctx);
int cmd_compact(Context& ctx);
int cmd_plugins(Context& ctx);
int cmd_tools(Context& ctx);
int cmd_tool(Context& ctx);
int cmd_parse_toolcalls(Context& ctx);
int cmd_doctor(Context& ctx);
int cmd_completion(Context& ctx);

// JSON as the commands print it: indented, invalid UTF-8 replaced.
std::string dump(const nlohmann::json& j, int indent = 2);
// --json, --quiet or the terminal.
Output output_of(const Invocation& in);
// A message of several lines under a list entry: the lines after the first indented like it.
std::string indented(const std::string& text, const std::string& indent);

}  // namespace agenthost::cli
