#include "request_reader.hpp"

#include <simdjson.h>

namespace scripted {

namespace ondemand = simdjson::ondemand;

struct RequestReader::Parser {
    ondemand::parser parser;
    simdjson::padded_string text;  // the request copied with the padding simdjson reads past its end
};

RequestReader::RequestReader() = default;
RequestReader::~RequestReader() = default;

std::unique_ptr<RequestReader::Parser> RequestReader::take() {
    std::lock_guard lock(idle_mutex_);
    if (idle_.empty()) return std::make_unique<Parser>();
    std::unique_ptr<Parser> parser = std::move(idle_.back());
    idle_.pop_back();
    return parser;
}

void RequestReader::give_back(std::unique_ptr<Parser> parser) {
    constexpr size_t kKeptIdle = 16;                           // enough for the concurrent chats of a busy server
    constexpr size_t kKeptCapacity = size_t{4} * 1024 * 1024;  // a parser grown by a huge request is let go
    if (parser->parser.capacity() > kKeptCapacity) return;
    std::lock_guard lock(idle_mutex_);
    if (idle_.size() < kKeptIdle) idle_.push_back(std::move(parser));
}

namespace {

uint64_t fnv1a(std::string_view bytes) {
    uint64_t h = 1469598103934665603ull;
    for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

// Whether `value` is a string; a value of another type is left unread (skipped).
simdjson::error_code is_string(ondemand::value& value, bool& yes) {
    ondemand::json_type type;
    if (auto e = value.type().get(type)) return e;
    yes = type == ondemand::json_type::string;
    return simdjson::SUCCESS;
}

// The message's role and content when they are strings; empty otherwise (parts, null, absent).
// host_state: the message is the agent's state the host adds last ("agenthost_state": true).
simdjson::error_code text_content(ondemand::object message, std::string_view& role, std::string_view& content, bool& is_text,
                                  bool& host_state) {
    role = {};
    content = {};
    is_text = false;
    host_state = false;
    for (auto field : message) {
        ondemand::raw_json_string key;
        if (auto e = field.key().get(key)) return e;
        if (key == "agenthost_state") {
            bool flag = false;
            if (!field.value().get_bool().get(flag)) host_state = flag;
            continue;
        }
        const bool is_role = key == "role";
        if (!is_role && key != "content") continue;
        ondemand::value value = field.value();
        bool text = false;
        if (auto e = is_string(value, text)) return e;
        if (!text) continue;
        if (auto e = value.get_string().get(is_role ? role : content)) return e;
        if (!is_role) is_text = true;
    }
    return simdjson::SUCCESS;
}

// Reads the facts from a parsed document: the messages' text for the print first, then each
// message's role and content (the document is read again from its start for that). An element
// that is not an object is no message: it is passed over.
simdjson::error_code read_facts(ondemand::document& doc, RequestFacts& facts) {
    std::string_view messages_text;
    {
        ondemand::array messages;
        if (auto e = doc["messages"].get_array().get(messages)) return e;
        if (auto e = messages.raw_json().get(messages_text)) return e;
    }
    facts.messages_print = fnv1a(messages_text);
    doc.rewind();
    ondemand::array messages;
    if (auto e = doc["messages"].get_array().get(messages)) return e;
    bool user_seen = false;
    std::string_view last_user, last_message;
    for (auto element : messages) {
        ondemand::value value;
        if (auto e = element.get(value)) return e;
        ondemand::json_type type;
        if (auto e = value.type().get(type)) return e;
        if (type != ondemand::json_type::object) {
            last_message = {};
            continue;
        }
        ondemand::object message;
        if (auto e = value.get_object().get(message)) return e;
        std::string_view role, content;
        bool is_text = false, host_state = false;
        if (auto e = text_content(message, role, content, is_text, host_state)) return e;
        if (host_state) continue;  // the host's note of the agent's state: not what the user or a tool said
        // Views into the parser's string buffer stay valid until the next parse.
        last_message = is_text ? content : std::string_view();
        if (role == "user") {
            last_user = is_text ? content : std::string_view();
            user_seen = true;
        }
    }
    facts.last_user = user_seen ? std::string(last_user) : std::string();
    facts.last_message = std::string(last_message);
    return simdjson::SUCCESS;
}

}  // namespace

bool RequestReader::read(std::string_view request, RequestFacts& facts, std::string& error) {
    std::unique_ptr<Parser> p = take();
    p->text = simdjson::padded_string(request);
    ondemand::document doc;
    simdjson::error_code e = p->parser.iterate(p->text).get(doc);
    if (!e) e = read_facts(doc, facts);
    p->text = simdjson::padded_string();  // the request is not kept between calls
    give_back(std::move(p));
    if (e) error = std::string("the request is not a chat request with a \"messages\" array: ") + simdjson::error_message(e);
    return !e;
}

}  // namespace scripted
