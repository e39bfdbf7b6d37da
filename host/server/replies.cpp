#include "server/replies.hpp"

#include "common/bounded_json.hpp"
#include "common/json_fault.hpp"

namespace agenthost::server {
using nlohmann::json;

void send_json(Response& res, int status, const json& body) {
    res.set_status(status);
    res.set_content(json_io::dump(body), "application/json");
}

void send_error(Response& res, int status, const std::string& code, const std::string& message, const std::string& type) {
    send_json(res, status, {{"error", {{"message", message}, {"type", type}, {"code", code}, {"param", nullptr}}}});
}

void send_rpc_error(Response& res, int status, const std::string& reason, const std::string& message, int rpc_code,
                    const json& id) {
    send_json(res, status,
              {{"jsonrpc", "2.0"},
               {"id", id},
               {"error", {{"code", rpc_code}, {"message", message}, {"data", {{"status", status}, {"reason", reason}}}}}});
}

void send_http_error(Response& res, const HttpError& e, const std::string& message, const json& agenthost) {
    if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
    res.set_header("x-should-retry", e.should_retry ? "true" : "false");
    json body{{"error", {{"message", message}, {"type", e.type}, {"code", e.code}, {"param", nullptr}}}};
    if (!agenthost.is_null()) body["agenthost"] = agenthost;
    send_json(res, e.status, body);
}

std::optional<json> body_object(const std::string& body, size_t max_bytes, Response& res, bool empty_ok) {
    if (body.empty() && empty_ok) return json::object();
    auto parsed = json_io::parse(body, {max_bytes, kMaxJsonDepth, kMaxJsonValues}, json_io::Utf8::refuse);
    if (!parsed) {
        // Too deep and too many keep their own words; every other fault is "invalid_json".
        using json_io::JsonFault;
        auto fault = json_io::json_fault(parsed.error());
        std::string code = fault == JsonFault::too_deep || fault == JsonFault::too_many_values ? parsed.error().code
                           : fault == JsonFault::duplicate_key                                 ? "duplicate_key"
                                                                                               : "invalid_json";
        send_error(res, 400, code, "the request body is not acceptable JSON: " + parsed.error().message);
        return std::nullopt;
    }
    if (!parsed->is_object()) {
        send_error(res, 400, "invalid_json", "the request body must be a JSON object");
        return std::nullopt;
    }
    return std::move(*parsed);
}

std::string Fields::str(const char* key, std::string fallback) {
    bool bad = false;
    auto v = json_io::get_string(body, key, std::move(fallback), &bad);
    if (bad && wrong.empty()) wrong = std::string("\"") + key + "\" must be a string";
    return v;
}

bool Fields::boolean(const char* key, bool fallback) {
    bool bad = false;
    auto v = json_io::get_bool(body, key, fallback, &bad);
    if (bad && wrong.empty()) wrong = std::string("\"") + key + "\" must be true or false";
    return v;
}

std::optional<int64_t> Fields::count(const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
        if (wrong.empty()) wrong = std::string("\"") + key + "\" must be a whole number, 0 or more";
        return std::nullopt;
    }
    return it->get<int64_t>();
}

const json* Fields::object(const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return nullptr;
    if (!it->is_object()) {
        if (wrong.empty()) wrong = std::string("\"") + key + "\" must be a JSON object";
        return nullptr;
    }
    return &*it;
}

bool Fields::ok(Response& res) const {
    if (wrong.empty()) return true;
    send_error(res, 400, "invalid_field", wrong + "; fix the request body");
    return false;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace agenthost::server
