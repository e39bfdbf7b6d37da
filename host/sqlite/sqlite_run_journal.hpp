// The SQLite run journal (the embedded default).
#pragma once

#include "sqlite/database.hpp"
#include "store/journal_sql.hpp"
#include "store/run_journal.hpp"

namespace agenthost::sqlite {

class SqliteRunJournal final : public store::RunJournal {
public:
    // `lease_seconds`: how long a run stays claimed without a heartbeat.
    SqliteRunJournal(Database& db, int lease_seconds);

    // This process's lease identity: host, pid and process start time.
    const std::string& owner() const { return owner_; }

    using store::RunJournal::begin_run;
    // Starts a run: the conversation (created if new), the run (running, leased by this process),
    // its prompt message and its inputs, in one transaction. Returns the run; its turn is the next number.
    Result<store::RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                       std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                       const store::RunStart& start) override;
    Result<std::optional<store::KeyedRun>> run_for_key(std::string_view key) override;
    Result<std::string> run_inputs(int64_t run) override;
    // Commits a step; returns the ids of its messages, in order.
    Result<std::vector<int64_t>> write_step(int64_t run, const store::StepWrite& step) override;
    // Records that a tool call is about to run (durable before the call starts).
    Status journal_intent(int64_t run, const store::ToolIntent& intent, store::Flush flush) override;
    Result<std::optional<store::JournalEntry>> journal(int64_t run, std::string_view call_id) override;
    Status end_run(int64_t run, const store::RunEnd& end) override;

    Result<std::optional<store::RunRecord>> run(int64_t id) override;
    // Newest first; an empty conversation lists every conversation's runs.
    Result<std::vector<store::RunRecord>> runs(std::string_view conversation, int limit) override;
    Result<std::optional<store::RunRecord>> paused_run(std::string_view conversation) override;
    Result<std::vector<store::RunRecord>> interrupted_runs(int limit, std::optional<RunOrigin> origin) override;
    Result<std::optional<store::Checkpoint>> last_checkpoint(int64_t run) override;
    // The run's messages with id >= from_id (its prompt included), in order.
    Result<std::vector<store::StoredMessage>> run_messages(int64_t run, int64_t from_id) override;

    // The prompts and answers of the `turns` turns before `before_turn`, oldest first.
    Result<std::vector<store::StoredMessage>> exchanges(std::string_view conversation, int64_t before_turn, int turns) override;
    Result<std::vector<store::StoredMessage>> all(std::string_view conversation) override;

    Result<std::vector<store::ConversationSummary>> conversations(int limit) override;
    Result<std::optional<store::ConversationSummary>> conversation(std::string_view id) override;
    // Renaming is not activity: updated_at stays.
    Result<bool> rename_conversation(std::string_view conversation, std::string_view title) override;
    // Removes a conversation's messages, runs, checkpoints, journal and session memory (not facts).
    // Returns false when it did not exist.
    Result<bool> delete_conversation(std::string_view conversation) override;

    // Takes a run over for this process (to resume it): it must be paused or interrupted, or have
    // failed for a cause that may pass (the provider, a timeout, the store, an output limit).
    Status claim(int64_t run) override;
    Status renew(int64_t run) override;
    // Marks `running` runs whose process is gone (lease expired, or the owner process on this host
    // has exited) as interrupted. Returns how many.
    Result<int> recover_interrupted() override;

    // Drops checkpoints and journal rows of finished runs beyond the newest `keep_runs` per
    // conversation or older than `keep_days` days; messages are kept. Returns rows deleted.
    Result<int64_t> compact(int keep_runs, int keep_days) override;

    Result<store::JournalStats> stats() override;

private:
    store::Recovery recover();

    Database& db_;
    int lease_seconds_;
    std::string owner_;
};

}  // namespace agenthost::sqlite
