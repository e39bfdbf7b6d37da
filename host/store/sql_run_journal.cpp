#include "store/sql_run_journal.hpp"

#include "store/run_owner.hpp"
#include "store/store_error.hpp"

namespace agenthost::store {

SqlRunJournal::SqlRunJournal(std::vector<std::string_view> run_tables, std::string owner, int lease_seconds)
    : run_tables_(std::move(run_tables)), owner_(std::move(owner)), lease_seconds_(lease_seconds) {}

Result<RunRecord> SqlRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                           std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                           const RunStart& start) {
    const RunOpening opening{conversation, mode, provider, prompt, prompt_body, inputs_json, start, owner_, lease_seconds_};
    auto open = [&] { return writing<RunRecord>([&](SqlConnection& sql) { return open_run(sql, opening); }); };
    // A running run holds the conversation: seen by the opening's own check (SQLite), or by the
    // unique index when two hosts open at once (PostgreSQL).
    auto held = [](const Result<RunRecord>& r) {
        return !r && (is(r.error(), StoreFault::conversation_busy) || is(r.error(), StoreFault::conflict));
    };
    auto opened = open();
    if (!held(opened)) return opened;
    // A run left `running` by a dead process does not hold its conversation: once marked
    // interrupted, the run opens. Looked for only here, so a run that opens reads nothing more.
    // Should marking it fail, it still holds it, and begin_run says the conversation is busy.
    if (auto marked = recover_interrupted(); marked && *marked > 0) opened = open();
    if (!opened && is(opened.error(), StoreFault::conflict)) return opening_conflict(*this, opening);
    return opened;
}

Result<std::optional<KeyedRun>> SqlRunJournal::run_for_key(std::string_view key) {
    return reading<std::optional<KeyedRun>>([&](SqlConnection& sql) { return keyed_run(sql, key); });
}

Result<std::string> SqlRunJournal::run_inputs(int64_t run) {
    return reading<std::string>([&](SqlConnection& sql) { return store::run_inputs(sql, run); });
}

Result<std::vector<int64_t>> SqlRunJournal::write_step(int64_t run, const StepWrite& step) {
    return writing<std::vector<int64_t>>(
        [&](SqlConnection& sql) { return store::write_step(sql, run, owner_, step, now_seconds() + lease_seconds_); },
        step.flush);
}

Status SqlRunJournal::journal_intent(int64_t run, const ToolIntent& intent, Flush flush) {
    return with_write([&](SqlConnection& sql) { return write_intent(sql, run, owner_, intent); }, flush);
}

Result<std::optional<JournalEntry>> SqlRunJournal::journal(int64_t run, std::string_view call_id) {
    return reading<std::optional<JournalEntry>>([&](SqlConnection& sql) { return journal_entry(sql, run, call_id); });
}

Status SqlRunJournal::end_run(int64_t run, const RunEnd& end) {
    return with_write([&](SqlConnection& sql) { return write_run_end(sql, run, owner_, end); }, Flush::now);
}

Result<std::optional<RunRecord>> SqlRunJournal::run(int64_t id) {
    return reading<std::optional<RunRecord>>([&](SqlConnection& sql) { return run_by_id(sql, id); });
}

Result<std::vector<RunRecord>> SqlRunJournal::runs(std::string_view conversation, int limit) {
    return reading<std::vector<RunRecord>>([&](SqlConnection& sql) { return newest_runs(sql, conversation, limit); });
}

Result<std::optional<RunRecord>> SqlRunJournal::paused_run(std::string_view conversation) {
    return reading<std::optional<RunRecord>>([&](SqlConnection& sql) { return store::paused_run(sql, conversation); });
}

Result<std::vector<RunRecord>> SqlRunJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
    return reading<std::vector<RunRecord>>([&](SqlConnection& sql) { return waiting_runs(sql, limit, origin); });
}

Result<std::optional<Checkpoint>> SqlRunJournal::last_checkpoint(int64_t run) {
    return reading<std::optional<Checkpoint>>([&](SqlConnection& sql) { return store::last_checkpoint(sql, run); });
}

Result<std::vector<StoredMessage>> SqlRunJournal::run_messages(int64_t run, int64_t from_id) {
    return reading<std::vector<StoredMessage>>([&](SqlConnection& sql) { return store::run_messages(sql, run, from_id); });
}

Result<std::vector<StoredMessage>> SqlRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    // Turns are numbered from 1: before the first (a new conversation's usual case) there is nothing
    // to read, so the store is not asked.
    if (before_turn <= 1 || turns <= 0) return std::vector<StoredMessage>{};
    return reading<std::vector<StoredMessage>>(
        [&](SqlConnection& sql) { return store::exchanges(sql, conversation, before_turn, turns); });
}

Result<std::vector<StoredMessage>> SqlRunJournal::all(std::string_view conversation) {
    return reading<std::vector<StoredMessage>>([&](SqlConnection& sql) { return conversation_messages(sql, conversation); });
}

Result<std::vector<ConversationSummary>> SqlRunJournal::conversations(int limit) {
    return reading<std::vector<ConversationSummary>>([&](SqlConnection& sql) { return conversation_summaries(sql, limit); });
}

Result<std::optional<ConversationSummary>> SqlRunJournal::conversation(std::string_view id) {
    return reading<std::optional<ConversationSummary>>([&](SqlConnection& sql) { return conversation_summary(sql, id); });
}

Result<bool> SqlRunJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    return writing<bool>([&](SqlConnection& sql) { return store::rename_conversation(sql, conversation, title); });
}

Result<bool> SqlRunJournal::delete_conversation(std::string_view conversation) {
    return writing<bool>([&](SqlConnection& sql) { return store::delete_conversation(sql, conversation, run_tables_); });
}

Status SqlRunJournal::renew(int64_t run) {
    return with_write([&](SqlConnection& sql) { return renew_lease(sql, run, owner_, lease_seconds_); }, Flush::now);
}

Result<int> SqlRunJournal::recover_interrupted() {
    Recovery found = recover();
    if (!found.marked) return found.marked.error();
    return found.taken;
}

Result<int64_t> SqlRunJournal::compact(int keep_runs, int keep_days) {
    return writing<int64_t>([&](SqlConnection& sql) { return compact_runs(sql, keep_runs, keep_days); });
}

Result<JournalStats> SqlRunJournal::stats() {
    return reading<JournalStats>([&](SqlConnection& sql) { return journal_stats(sql); });
}

}  // namespace agenthost::store
