// agenthost init: a first configuration for the provider the user picks, checked against it.
#pragma once

#include "cli/commands.hpp"

namespace agenthost::cli {

int run_init(Context& ctx);

}  // namespace agenthost::cli
