// The tools a reply may call, with their parameter schemas (values written as text are typed by them).
#include "toolcalls/extractor.hpp"
#include "toolcalls/formats.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::toolcalls {

using nlohmann::json;

ToolSet::ToolSet() : impl_(std::make_shared<Impl>()) {}
ToolSet::~ToolSet() = default;
ToolSet::ToolSet(const ToolSet&) = default;
ToolSet& ToolSet::operator=(const ToolSet&) = default;
ToolSet::ToolSet(ToolSet&&) noexcept = default;
ToolSet& ToolSet::operator=(ToolSet&&) noexcept = default;

Result<ToolSet> ToolSet::from_json(std::string_view definitions_json) {
    json defs = json::parse(definitions_json.begin(), definitions_json.end(), nullptr, false);
    if (defs.is_discarded() || !defs.is_array())
        return Error{"invalid_tools",
                     "the tool definitions must be a JSON array of {\"type\": \"function\", "
                     "\"function\": {\"name\", \"description\", \"parameters\"}}"};
    ToolSet set;
    set.impl_->any = false;
    for (size_t i = 0; i < defs.size(); ++i) {
        const json& d = defs[i].is_object() && defs[i].contains("function") ? defs[i]["function"] : defs[i];
        if (!d.is_object() || !d.contains("name") || !d["name"].is_string())
            return Error{"invalid_tools", "tool definition [" + std::to_string(i) + "] has no \"name\" string"};
        set.impl_->schemas[d["name"].get<std::string>()] = d.value("parameters", json::object());
    }
    return set;
}

void ToolSet::add(const std::string& name, const std::string& parameters_schema_json) {
    if (impl_.use_count() > 1) impl_ = std::make_shared<Impl>(*impl_);  // copies share until written
    impl_->any = false;
    json schema = json::parse(parameters_schema_json, nullptr, false);
    impl_->schemas[name] = schema.is_discarded() ? json::object() : schema;
}

bool ToolSet::offers(std::string_view name) const { return impl_->any || impl_->schemas.count(name) > 0; }

std::vector<std::string> ToolSet::names() const {
    std::vector<std::string> out;
    for (const auto& [name, schema] : impl_->schemas) out.push_back(name);
    return out;
}

}  // namespace agenthost::toolcalls
