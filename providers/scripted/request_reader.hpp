// What the scripted provider reads of a chat request, read straight from the request's JSON text
// with simdjson's on-demand parser: the request is never built as a tree (building it cost more
// than everything else the provider does per reply). simdjson is included in one file only.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace scripted {

struct RequestFacts {
    // The host's message of the agent's state ("agenthost_state": true) is passed over in both.
    std::string last_user;     // the content of the newest user message, when it is text
    std::string last_message;  // the content of the newest message of any role, when it is text
    // FNV-1a of the messages array's JSON text: the same messages, sent by whichever process,
    // give the same print (the host serialises a message the same way every time).
    uint64_t messages_print = 0;
};

class RequestReader {
public:
    RequestReader();
    ~RequestReader();
    RequestReader(const RequestReader&) = delete;
    RequestReader& operator=(const RequestReader&) = delete;

    // The facts of `request` (the canonical chat request as JSON text); false with `error` set
    // when it is not a JSON object with a "messages" array. Safe to call from many threads.
    bool read(std::string_view request, RequestFacts& facts, std::string& error);

private:
    struct Parser;
    // Parsers keep their buffers between requests; one per concurrent call, reused.
    std::unique_ptr<Parser> take();
    void give_back(std::unique_ptr<Parser> parser);
    std::mutex idle_mutex_;
    std::vector<std::unique_ptr<Parser>> idle_;
};

}  // namespace scripted
