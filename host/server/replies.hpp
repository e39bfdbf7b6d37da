// How every route answers: JSON bodies, errors in the OpenAI error shape (the codes and statuses
// of error_table.hpp), request bodies read as bounded JSON objects, and typed reads of their fields.
#pragma once

#include "server/error_table.hpp"
#include "server/http.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace agenthost::server {

inline constexpr int kMaxJsonDepth = 64;  // nesting of any JSON body; deeper is refused unparsed
// Values in any JSON body (json_io::Limits::max_values): a 4 MiB body of empty objects would take
// over 100 MiB parsed; more values are refused unparsed.
inline constexpr size_t kMaxJsonValues = 100000;

void send_json(Response& res, int status, const nlohmann::json& body);
// Every error, on every route, in the OpenAI error shape — but /mcp's (send_rpc_error).
void send_error(Response& res, int status, const std::string& code, const std::string& message,
                const std::string& type = "invalid_request_error");
// An error on /mcp, as MCP clients read them: a JSON-RPC error object (`rpc_code`, -32000 unless
// JSON-RPC names one), the HTTP status and the reason word in its `data`.
void send_rpc_error(Response& res, int status, const std::string& reason, const std::string& message, int rpc_code = -32000,
                    const nlohmann::json& id = nullptr);
// An error from the one table (error_table.hpp), with its Retry-After and x-should-retry.
void send_http_error(Response& res, const HttpError& e, const std::string& message, const nlohmann::json& agenthost = nullptr);

// The body as a JSON object within `max_bytes` and kMaxJsonDepth; a 400 naming the problem
// otherwise. An empty body is an empty object when `empty_ok`.
std::optional<nlohmann::json> body_object(const std::string& body, size_t max_bytes, Response& res, bool empty_ok = false);

// Typed reads of a request body's members: the first wrong-typed one is remembered and answered
// with a 400 naming it.
struct Fields {
    explicit Fields(const nlohmann::json& b) : body(b) {}
    const nlohmann::json& body;
    std::string wrong;

    std::string str(const char* key, std::string fallback = {});
    bool boolean(const char* key, bool fallback);
    std::optional<int64_t> count(const char* key);  // an optional whole number >= 0 (nullopt when absent)
    const nlohmann::json* object(const char* key);  // an optional object member (nullptr when absent)
    bool ok(Response& res) const;                   // false after answering the 400
};

// Header words: lower-cased, and without surrounding blanks.
std::string lower(std::string s);
std::string trim(const std::string& s);

}  // namespace agenthost::server
