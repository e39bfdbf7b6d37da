#include "cli/terminal_form.hpp"

#include "common/bounded_json.hpp"
#include "common/schema_validator.hpp"

#include <algorithm>
#include <charconv>

namespace agenthost::cli {

using nlohmann::json;
using plugins::CallerAnswer;

namespace {

constexpr int kTries = 3;  // a field given a wrong value this many times dismisses the question

CallerAnswer action(const std::string& name, json content = nullptr) {
    json reply{{"action", name}};
    if (!content.is_null()) reply["content"] = std::move(content);
    return {AH_OK, json_io::dump(reply)};
}

const json& properties(const json& params) {
    static const json kNone = json::object();
    if (!params.contains("requestedSchema") || !params["requestedSchema"].is_object()) return kNone;
    const json& schema = params["requestedSchema"];
    return schema.contains("properties") && schema["properties"].is_object() ? schema["properties"] : kNone;
}

bool required(const json& params, const std::string& name) {
    const json& schema = params.contains("requestedSchema") ? params["requestedSchema"] : json();
    if (!schema.is_object() || !schema.contains("required") || !schema["required"].is_array()) return false;
    const json& list = schema["required"];
    return std::find(list.begin(), list.end(), json(name)) != list.end();
}

// The values a field may take, with the words shown for each: "enum" (with "enumNames"), or
// "oneOf"/"anyOf" of {"const", "title"}; for an array, its items'.
struct Choice {
    std::string value, label;
};
std::vector<Choice> choices(const json& field) {
    const json& f = json_io::get_string(field, "type") == "array" && field.contains("items") ? field["items"] : field;
    std::vector<Choice> out;
    if (f.contains("enum") && f["enum"].is_array()) {
        const json names = f.contains("enumNames") && f["enumNames"].is_array() ? f["enumNames"] : json::array();
        for (size_t i = 0; i < f["enum"].size(); ++i)
            if (f["enum"][i].is_string())
                out.push_back({f["enum"][i].get<std::string>(),
                               i < names.size() && names[i].is_string() ? names[i].get<std::string>() : std::string()});
    }
    for (const char* key : {"oneOf", "anyOf"})
        if (f.contains(key) && f[key].is_array())
            for (const auto& v : f[key])
                if (v.is_object() && v.contains("const") && v["const"].is_string())
                    out.push_back({v["const"].get<std::string>(), json_io::get_string(v, "title")});
    return out;
}

// One typed value from what the person wrote; nullopt when it does not fit the field.
std::optional<json> value_of(const json& field, const std::string& text) {
    const std::string type = json_io::get_string(field, "type", "string");
    const auto options = choices(field);
    auto pick = [&](const std::string& word) -> std::optional<json> {
        if (options.empty()) return json(word);
        for (const auto& o : options)
            if (o.value == word || (!o.label.empty() && o.label == word)) return json(o.value);
        size_t n = 0;
        auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), n);
        if (error == std::errc() && end == word.data() + word.size() && n >= 1 && n <= options.size())
            return json(options[n - 1].value);
        return std::nullopt;
    };
    if (type == "boolean") {
        if (text == "y" || text == "yes" || text == "true") return json(true);
        if (text == "n" || text == "no" || text == "false") return json(false);
        return std::nullopt;
    }
    if (type == "integer" || type == "number") {
        json number = json::parse(text, nullptr, false);
        if (!number.is_number() || (type == "integer" && !number.is_number_integer())) return std::nullopt;
        return number;
    }
    if (type == "array") {
        json list = json::array();
        size_t start = 0;
        while (start <= text.size()) {
            size_t comma = std::min(text.find(',', start), text.size());
            std::string word = text.substr(start, comma - start);
            word.erase(0, word.find_first_not_of(' '));
            word.erase(word.find_last_not_of(' ') + 1);
            if (!word.empty()) {
                auto one = pick(word);
                if (!one) return std::nullopt;
                list.push_back(*one);
            }
            start = comma + 1;
        }
        return list;
    }
    return pick(text);
}

std::string field_line(const std::string& name, const json& field, bool is_required) {
    std::string line = "  " + json_io::get_string(field, "title", name) + (is_required ? " *" : "");
    if (std::string about = json_io::get_string(field, "description"); !about.empty()) line += " (" + about + ")";
    const auto options = choices(field);
    for (size_t i = 0; i < options.size(); ++i) {
        line += i ? ", " : " — ";
        line += std::to_string(i + 1) + " " + (options[i].label.empty() ? options[i].value : options[i].label);
    }
    const std::string type = json_io::get_string(field, "type");
    if (type == "array") line += " (numbers or values, separated by commas)";
    if (type == "boolean") line += " [y/n]";
    if (field.contains("default"))
        line += " [Enter: " +
                (type == "boolean" ? std::string(field["default"] == true ? "y" : "n") : json_io::dump(field["default"])) + "]";
    else if (!is_required)
        line += " [Enter: leave out]";
    return line + ": ";
}

}  // namespace

CallerAnswer ask_form(const std::string& tool, const json& params, const FormIo& io) {
    io.out << "? " << tool << " asks: " << json_io::get_string(params, "message", "a question") << "\n"
           << "  (* must be answered; Enter takes the default; type decline to refuse; Ctrl-D dismisses it)\n";
    json content = json::object();
    for (const auto& [name, field] : properties(params).items()) {
        const bool must = required(params, name);
        for (int tries = 0;; ++tries) {
            if (tries == kTries) return action("cancel");
            io.out << field_line(name, field, must) << std::flush;
            auto line = io.read_line();
            if (!line) return action("cancel");
            if (*line == "decline") return action("decline");
            if (line->empty() && field.contains("default")) {
                content[name] = field["default"];
                break;
            }
            if (line->empty() && !must) break;
            auto value = value_of(field, *line);
            // The same check the server makes of an answer: limits, lengths, item counts.
            auto problems = value ? schema::validate_against_schema(*value, field) : std::vector<std::string>{};
            if (value && problems.empty() && !(must && line->empty())) {
                content[name] = *value;
                break;
            }
            io.out << "  "
                   << (must && line->empty() ? std::string("this one must be answered")
                       : !problems.empty()   ? problems.front()
                                             : std::string("that is not a value of this field"))
                   << "; try again\n";
        }
    }
    return action("accept", std::move(content));
}

CallerAnswer accept_defaults(const json& params) {
    json content = json::object();
    for (const auto& [name, field] : properties(params).items()) {
        if (field.contains("default"))
            content[name] = field["default"];
        else if (required(params, name))
            return {AH_ERR_UNSUPPORTED, "--yes cannot answer the question: its field '" + name +
                                            "' has no default; answer it at a terminal, without --yes"};
    }
    return action("accept", std::move(content));
}

}  // namespace agenthost::cli
