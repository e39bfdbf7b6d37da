// How both SQL journals select runs, messages and conversations, and read a row back into its
// record: the select lists and the column order are written once, so a field one backend stores and
// the other forgets is impossible to write. A backend passes its rows through any type with
// text(i), integer(i) and real(i) for column i (sqlite::Statement, postgres::Row).
#pragma once

#include "store/run_journal.hpp"
#include "store/run_owner.hpp"

#include <concepts>
#include <string>
#include <string_view>

namespace agenthost::store {

template <class Row>
concept ColumnReader = requires(const Row& row, int column) {
    { row.text(column) } -> std::convertible_to<std::string>;
    { row.integer(column) } -> std::convertible_to<int64_t>;
    { row.real(column) } -> std::convertible_to<double>;
};

// The select list read_run() reads, from the runs table. A run's messages are those of its turn
// (every run has a turn of its own), counted through the (conversation, turn) index both backends
// have; rows written before messages named their run are counted too.
inline constexpr const char* kRunColumns =
    "id, conversation, turn, status, mode, provider, prompt, COALESCE(stop_reason, ''), COALESCE(error_code, ''),"
    " COALESCE(error, ''), COALESCE(answer, ''), iterations, tool_calls, input_tokens, output_tokens, started_at,"
    " updated_at, COALESCE(ended_at, 0),"
    " (SELECT COUNT(*) FROM messages m WHERE m.conversation = runs.conversation AND m.turn = runs.turn), recoveries, origin,"
    " COALESCE(model, ''), COALESCE(after_turn, turn - 1)";

template <ColumnReader Row>
RunRecord read_run(const Row& row) {
    RunRecord run;
    run.id = row.integer(0);
    run.conversation = row.text(1);
    run.turn = row.integer(2);
    run.status = parse_run_status(row.text(3)).value_or(RunStatus::failed);
    run.mode = parse_mode(row.text(4)).value_or(Mode::execute);
    run.provider = row.text(5);
    run.prompt = row.text(6);
    run.stop_reason = parse_stop_reason(row.text(7));
    run.error_code = row.text(8);
    run.error = row.text(9);
    run.answer = row.text(10);
    run.counters = {static_cast<int>(row.integer(11)), static_cast<int>(row.integer(12)), row.integer(13), row.integer(14)};
    run.started_at = row.real(15);
    run.updated_at = row.real(16);
    run.ended_at = row.real(17);
    run.messages = row.integer(18);
    run.recoveries = row.integer(19);
    run.origin = parse_run_origin(row.text(20));
    run.model = row.text(21);
    run.after_turn = row.integer(22);
    return run;
}

// The select list read_message() reads, from the messages table.
inline constexpr const char* kMessageColumns = "id, turn, COALESCE(run, 0), kind, body, COALESCE(result, '')";

template <ColumnReader Row>
StoredMessage read_message(const Row& row) {
    return {row.integer(0), row.integer(1), row.integer(2), message_kind_from(row.text(3)), row.text(4), row.text(5)};
}

// The conversation listing's SELECT up to its WHERE / ORDER BY: the same SQL in both dialects
// (substr counts characters in both), read by read_summary().
inline constexpr const char* kSummarySelect =
    "SELECT c.id, c.created_at, c.updated_at, (SELECT COUNT(*) FROM runs r WHERE r.conversation = c.id),"
    " COALESCE((SELECT substr(prompt, 1, 200) FROM runs r WHERE r.conversation = c.id ORDER BY r.id DESC LIMIT 1), ''),"
    " c.title FROM conversations c ";
static_assert(kPromptPreviewChars == 200, "the listing's SQL shows 200 characters");

template <ColumnReader Row>
ConversationSummary read_summary(const Row& row) {
    return {row.text(0), row.real(1), row.real(2), row.integer(3), row.text(4), row.text(5)};
}

}  // namespace agenthost::store
