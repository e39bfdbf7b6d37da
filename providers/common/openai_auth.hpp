// How an OpenAI-style server takes the key, and the query every request to it carries: a bearer
// token for OpenAI and the servers compatible with it; Azure OpenAI's api-key header and, for its
// deployment URLs (.../openai/deployments/NAME), an api-version. Its v1 URLs (.../openai/v1) need none.
#pragma once

#include "wire.hpp"

#include <string>

namespace agenthost::providers {

struct OpenAiAuth {
    bool api_key_header = false;  // the key goes in "api-key", not "Authorization: Bearer"
    bool deployment_url = false;  // an Azure deployment: it serves the one model its URL names
    std::string query;            // "?api-version=…" for every request, or empty

    // From the plugin's settings auth_header ("auto" | "bearer" | "api-key") and api_version.
    static OpenAiAuth read(const json& cfg, const std::string& base_url) {
        const std::string base = lower(base_url);
        bool azure_host = false;
        for (const char* suffix : {".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"})
            azure_host = azure_host || base.find(suffix) != std::string::npos;
        OpenAiAuth auth;
        std::string header = cfg.value("auth_header", "auto");
        auth.api_key_header = header == "api-key" || (header == "auto" && azure_host);
        auth.deployment_url = base.find("/openai/deployments/") != std::string::npos;
        std::string version = cfg.value("api_version", "");
        if (version.empty() && auth.deployment_url) version = "2024-10-21";  // Azure's GA version
        if (!version.empty()) auth.query = "?api-version=" + version;
        return auth;
    }

    void add_key(json& headers, const std::string& api_key) const {
        if (api_key.empty()) return;
        if (api_key_header)
            headers["api-key"] = api_key;
        else
            headers["Authorization"] = "Bearer " + api_key;
    }
};

}  // namespace agenthost::providers
