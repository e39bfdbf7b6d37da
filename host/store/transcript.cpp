#include "store/transcript.hpp"

namespace agenthost::store {
namespace {

const char* kind_name(MessageKind kind) {
    switch (kind) {
    case MessageKind::prompt: return "prompt";
    case MessageKind::answer: return "answer";
    default: return "step";
    }
}

MessageKind kind_from(const std::string& name) {
    if (name == "prompt") return MessageKind::prompt;
    if (name == "answer") return MessageKind::answer;
    return MessageKind::step;
}

}  // namespace

int64_t Transcript::next_turn(std::string_view conversation) {
    return db_.read([&](Database& db) -> int64_t {
        auto stmt = db.prepare("SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE conversation = ?1");
        if (!stmt) return 1;
        stmt->bind(1, conversation);
        return stmt->step() ? stmt->integer(0) : 1;
    });
}

Status Transcript::append(std::string_view conversation, int64_t turn, MessageKind kind, std::string_view body_json) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("INSERT INTO messages (conversation, turn, kind, body) VALUES (?1, ?2, ?3, ?4)");
        if (!stmt) return stmt.error();
        return stmt->bind(1, conversation).bind(2, turn).bind(3, kind_name(kind)).bind(4, body_json).run();
    });
}

std::vector<StoredMessage> Transcript::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return db_.read([&](Database& db) {
        std::vector<StoredMessage> out;
        auto stmt = db.prepare(
            "SELECT id, turn, kind, body FROM messages WHERE conversation = ?1 AND kind IN ('prompt', 'answer') "
            "AND turn < ?2 AND turn >= ?2 - ?3 ORDER BY turn, id");
        if (!stmt) return out;
        stmt->bind(1, conversation).bind(2, before_turn).bind(3, static_cast<int64_t>(turns));
        while (stmt->step()) out.push_back({stmt->integer(0), stmt->integer(1), kind_from(stmt->text(2)), stmt->text(3)});
        return out;
    });
}

std::vector<StoredMessage> Transcript::all(std::string_view conversation) {
    return db_.read([&](Database& db) {
        std::vector<StoredMessage> out;
        auto stmt = db.prepare("SELECT id, turn, kind, body FROM messages WHERE conversation = ?1 ORDER BY id");
        if (!stmt) return out;
        stmt->bind(1, conversation);
        while (stmt->step()) out.push_back({stmt->integer(0), stmt->integer(1), kind_from(stmt->text(2)), stmt->text(3)});
        return out;
    });
}

}  // namespace agenthost::store
