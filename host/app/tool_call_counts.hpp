// Tool calls made outside runs — the MCP server's tools/call, over stdio or /mcp — counted by tool
// and outcome, so /metrics counts them beside the calls of runs (which the run journal counts).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::app {

class ToolCallCounts {
public:
    struct Count {
        std::string tool;
        std::string outcome;  // ok | error
        int64_t count = 0;
    };

    void add(const std::string& tool, bool ok) {
        std::lock_guard lock(mutex_);
        ++counts_[{tool, ok ? "ok" : "error"}];
    }
    std::vector<Count> snapshot() const {
        std::lock_guard lock(mutex_);
        std::vector<Count> out;
        for (const auto& [key, count] : counts_) out.push_back({key.first, key.second, count});
        return out;
    }

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, int64_t> counts_;
};

}  // namespace agenthost::app
