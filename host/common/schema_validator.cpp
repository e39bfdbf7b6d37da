#include "common/schema_validator.hpp"

#include "common/spelling.hpp"

#include <nlohmann/json.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cmath>
#include <memory>
#include <optional>

namespace agenthost::schema {
namespace {

using nlohmann::json;

std::string type_of(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "integer";
        case json::value_t::number_float: return "number";
        case json::value_t::string: return "string";
        case json::value_t::array: return "array";
        default: return "object";
    }
}

bool is_type(const json& v, const std::string& type) {
    if (type == "integer")
        return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (type == "number") return v.is_number();
    return type_of(v) == type;
}

std::string shown(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

enum class Match { yes, no, too_costly, bad_pattern };

// A JSON Schema "pattern" (ECMA-262 flavour) searched in `subject` with PCRE2, whose match and
// depth limits bound the work: schemas come from plugins and from bridged MCP servers, and a
// hostile pattern such as ^(a+)+$ must not stall the host the way a backtracking std::regex does.
Match search(const std::string& pattern, const std::string& subject) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY;
    std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code(
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error, &error_offset, nullptr),
        &pcre2_code_free);
    if (!code) return Match::bad_pattern;
    std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> limits(pcre2_match_context_create(nullptr),
                                                                                     &pcre2_match_context_free);
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
        pcre2_match_data_create_from_pattern(code.get(), nullptr), &pcre2_match_data_free);
    if (!limits || !data) throw std::bad_alloc();
    pcre2_set_match_limit(limits.get(), 1'000'000);
    pcre2_set_depth_limit(limits.get(), 10'000);
    pcre2_set_heap_limit(limits.get(), 20'000);  // KiB
    int rc =
        pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0, data.get(), limits.get());
    if (rc >= 0) return Match::yes;
    if (rc == PCRE2_ERROR_NOMATCH) return Match::no;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) return Match::too_costly;
    return Match::no;
}

size_t utf8_length(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

class Validator {
public:
    std::vector<std::string> errors;

    void check(const json& v, const json& schema, const std::string& path) {
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) fail(path, "is not allowed here");
            return;
        }
        if (!schema.is_object()) return;
        if (auto t = schema.find("type"); t != schema.end()) {
            std::vector<std::string> types;
            if (t->is_string())
                types.push_back(*t);
            else if (t->is_array())
                for (const auto& x : *t)
                    if (x.is_string()) types.push_back(x);
            bool ok = types.empty();
            for (const auto& type : types) ok = ok || is_type(v, type);
            if (!ok) {
                std::string want;
                for (const auto& type : types) want += (want.empty() ? "" : " or ") + type;
                return fail(path, "expected " + want + ", got " + type_of(v) + " " + shown(v));
            }
        }
        if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
            bool found = false;
            for (const auto& option : *e) found = found || option == v;
            if (!found) fail(path, shown(v) + " is not one of " + shown(*e));
        }
        if (auto c = schema.find("const"); c != schema.end() && *c != v) fail(path, "must be " + shown(*c));

        if (v.is_number()) numeric(v, schema, path);
        if (v.is_string()) text(v.get<std::string>(), schema, path);
        if (v.is_array()) array(v, schema, path);
        if (v.is_object()) object(v, schema, path);

        if (auto all = schema.find("allOf"); all != schema.end() && all->is_array())
            for (const auto& sub : *all) check(v, sub, path);
        for (const char* key : {"anyOf", "oneOf"}) {
            auto alternatives = schema.find(key);
            if (alternatives == schema.end() || !alternatives->is_array()) continue;
            size_t matched = 0;
            for (const auto& sub : *alternatives) matched += passes(v, sub, path);
            if (matched == 0)
                fail(path, "matches none of the allowed shapes (" + std::string(key) + ")");
            else if (std::string(key) == "oneOf" && matched > 1)
                fail(path, "matches more than one shape (oneOf)");
        }
        if (auto n = schema.find("not"); n != schema.end() && passes(v, *n, path)) fail(path, "matches a forbidden shape");
    }

private:
    void fail(const std::string& path, const std::string& why) {
        errors.push_back((path.empty() ? std::string("the arguments") : "field '" + path + "'") + ": " + why);
    }

    bool passes(const json& v, const json& schema, const std::string& path) {
        Validator sub;
        sub.check(v, schema, path);
        return sub.errors.empty();
    }

    static std::optional<double> number_at(const json& schema, const char* key) {
        auto it = schema.find(key);
        if (it == schema.end() || !it->is_number()) return std::nullopt;
        return it->get<double>();
    }

    // Each refusal shows the value given next to the bound it broke.
    void numeric(const json& v, const json& schema, const std::string& path) {
        const double x = v.get<double>();
        const std::string got = " (got " + shown(v) + ")";
        if (auto m = number_at(schema, "minimum"); m && x < *m) fail(path, "must be at least " + shown(schema["minimum"]) + got);
        if (auto m = number_at(schema, "maximum"); m && x > *m) fail(path, "must be at most " + shown(schema["maximum"]) + got);
        if (auto m = number_at(schema, "exclusiveMinimum"); m && x <= *m)
            fail(path, "must be greater than " + shown(schema["exclusiveMinimum"]) + got);
        if (auto m = number_at(schema, "exclusiveMaximum"); m && x >= *m)
            fail(path, "must be less than " + shown(schema["exclusiveMaximum"]) + got);
        if (auto m = number_at(schema, "multipleOf"); m && *m > 0 && std::fabs(std::remainder(x, *m)) > 1e-9)
            fail(path, "must be a multiple of " + shown(schema["multipleOf"]) + got);
    }

    void text(const std::string& s, const json& schema, const std::string& path) {
        size_t length = utf8_length(s);
        if (auto m = number_at(schema, "minLength"); m && length < *m)
            fail(path, "must be at least " + spelling::counted(static_cast<long long>(*m), "character", "characters") + " long");
        if (auto m = number_at(schema, "maxLength"); m && length > *m)
            fail(path, "must be at most " + spelling::counted(static_cast<long long>(*m), "character", "characters") + " long");
        if (auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
            const std::string& pattern = p->get_ref<const std::string&>();
            switch (search(pattern, s)) {
                case Match::no: fail(path, "must match the pattern " + pattern); break;
                case Match::too_costly:
                    fail(path, "could not be checked against the pattern " + pattern +
                                   " within its work limit; send a shorter or simpler value");
                    break;
                case Match::yes:
                case Match::bad_pattern: break;  // a pattern that does not compile is the tool author's problem, not the model's
            }
        }
    }

    void array(const json& v, const json& schema, const std::string& path) {
        if (auto m = number_at(schema, "minItems"); m && v.size() < *m)
            fail(path, "must have at least " + spelling::counted(static_cast<long long>(*m), "item", "items"));
        if (auto m = number_at(schema, "maxItems"); m && v.size() > *m)
            fail(path, "must have at most " + spelling::counted(static_cast<long long>(*m), "item", "items"));
        if (schema.value("uniqueItems", false))
            for (size_t i = 0; i < v.size(); ++i)
                for (size_t j = i + 1; j < v.size(); ++j)
                    if (v[i] == v[j]) return fail(path, "items must be unique; " + shown(v[i]) + " repeats");
        if (auto items = schema.find("items"); items != schema.end() && (items->is_object() || items->is_boolean()))
            for (size_t i = 0; i < v.size(); ++i) check(v[i], *items, path + "[" + std::to_string(i) + "]");
    }

    void object(const json& v, const json& schema, const std::string& path) {
        const std::string prefix = path.empty() ? "" : path + ".";
        if (auto required = schema.find("required"); required != schema.end() && required->is_array())
            for (const auto& name : *required)
                if (name.is_string() && !v.contains(name.get<std::string>()))
                    errors.push_back("field '" + prefix + name.get<std::string>() + "': is required but missing");
        auto props = schema.find("properties");
        bool has_props = props != schema.end() && props->is_object();
        auto additional = schema.find("additionalProperties");
        for (const auto& [key, value] : v.items()) {
            if (has_props && props->contains(key)) {
                check(value, (*props)[key], prefix + key);
            } else if (additional != schema.end()) {
                if (additional->is_boolean() && !additional->get<bool>()) {
                    std::string known;
                    if (has_props)
                        for (const auto& [name, s] : props->items()) known.append(known.empty() ? "" : ", ").append(name);
                    std::string error = "field '" + prefix;
                    error.append(key).append("': is not a parameter of this tool");
                    if (!known.empty()) error.append(" (parameters: ").append(known).append(")");
                    errors.push_back(std::move(error));
                } else {
                    check(value, *additional, prefix + key);
                }
            }
        }
    }
};

}  // namespace

namespace {

// Walks a schema the way the Validator reads it and reports the first keyword of the wrong shape.
class SchemaChecker {
public:
    std::string problem;

    bool check(const json& schema, const std::string& at) {
        if (schema.is_boolean()) return true;
        if (!schema.is_object()) return fail(at, "must be a JSON Schema (an object or a boolean), not " + type_of(schema));
        if (auto t = schema.find("type"); t != schema.end()) {
            if (t->is_string()) {
                if (!known_type(*t)) return fail(join(at, "type"), shown(*t) + " is not a JSON Schema type (" + kTypes + ")");
            } else if (t->is_array() && !t->empty()) {
                for (const auto& x : *t)
                    if (!x.is_string() || !known_type(x))
                        return fail(join(at, "type"), shown(x) + " is not a JSON Schema type (" + kTypes + ")");
            } else {
                return fail(join(at, "type"), "must be a type name or a non-empty array of them");
            }
        }
        if (auto r = schema.find("required"); r != schema.end()) {
            if (!r->is_array()) return fail(join(at, "required"), "must be an array of property names, not " + type_of(*r));
            for (const auto& name : *r)
                if (!name.is_string()) return fail(join(at, "required"), "must hold only strings, not " + shown(name));
        }
        if (auto p = schema.find("properties"); p != schema.end()) {
            if (!p->is_object()) return fail(join(at, "properties"), "must be an object of property schemas, not " + type_of(*p));
            for (const auto& [name, sub] : p->items())
                if (!check(sub, join(join(at, "properties"), name))) return false;
        }
        for (const char* key : {"items", "additionalProperties", "not"})
            if (auto sub = schema.find(key); sub != schema.end() && !check(*sub, join(at, key))) return false;
        for (const char* key : {"anyOf", "oneOf", "allOf"}) {
            auto list = schema.find(key);
            if (list == schema.end()) continue;
            if (!list->is_array() || list->empty()) return fail(join(at, key), "must be a non-empty array of schemas");
            for (size_t i = 0; i < list->size(); ++i)
                if (!check((*list)[i], join(at, key) + "[" + std::to_string(i) + "]")) return false;
        }
        for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
            if (auto n = schema.find(key); n != schema.end() && !n->is_number())
                return fail(join(at, key), "must be a number, not " + shown(*n));
        for (const char* key : {"minLength", "maxLength", "minItems", "maxItems"})
            if (auto n = schema.find(key);
                n != schema.end() && !(n->is_number_unsigned() || (n->is_number_integer() && n->get<int64_t>() >= 0)))
                return fail(join(at, key), "must be a non-negative integer, not " + shown(*n));
        if (auto u = schema.find("uniqueItems"); u != schema.end() && !u->is_boolean())
            return fail(join(at, "uniqueItems"), "must be true or false, not " + shown(*u));
        if (auto e = schema.find("enum"); e != schema.end() && !e->is_array())
            return fail(join(at, "enum"), "must be an array of values");
        if (auto p = schema.find("pattern"); p != schema.end()) {
            if (!p->is_string()) return fail(join(at, "pattern"), "must be a regular expression as a string");
            if (search(p->get<std::string>(), "") == Match::bad_pattern)
                return fail(join(at, "pattern"), shown(*p) + " is not a valid regular expression");
        }
        return true;
    }

private:
    static constexpr const char* kTypes = "object, array, string, number, integer, boolean, null";
    static bool known_type(const json& t) {
        for (const char* name : {"object", "array", "string", "number", "integer", "boolean", "null"})
            if (t == name) return true;
        return false;
    }
    static std::string join(const std::string& at, const std::string& key) { return at.empty() ? key : at + "." + key; }
    bool fail(const std::string& at, const std::string& why) {
        problem = (at.empty() ? std::string("the schema") : at) + ": " + why;
        return false;
    }
};

}  // namespace

std::string check_tool_schema(const json& schema) {
    if (!schema.is_object()) return "the input schema must be a JSON object, not " + type_of(schema);
    if (auto t = schema.find("type"); t != schema.end() && *t != "object")
        return "type: a tool's input schema must have \"type\": \"object\" (the arguments are an object), not " + shown(*t);
    SchemaChecker checker;
    checker.check(schema, "");
    return checker.problem;
}

std::vector<std::string> validate_against_schema(const json& value, const json& schema) {
    Validator v;
    v.check(value, schema, "");
    return v.errors;
}

}  // namespace agenthost::schema
