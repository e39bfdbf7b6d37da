// The run journal on PostgreSQL, for several hosts sharing one database: the same contract as the
// SQLite journal (sqlite/sqlite_run_journal.hpp), checked by the same conformance tests. One running run
// per conversation is a unique index, so two hosts cannot both start one; a run's lease names its
// owner process ("host:pid:start"), so any host can tell an abandoned run by its expired lease.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/journal_sql.hpp"
#include "store/run_journal.hpp"

namespace agenthost::postgres {

class PgRunJournal final : public store::RunJournal {
public:
    // `session` must outlive the journal; its database is migrated by open_backend (pg_backend.hpp).
    PgRunJournal(Session& session, int lease_seconds, std::string owner);

    const std::string& owner() const { return owner_; }

    using store::RunJournal::begin_run;
    Result<store::RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                       std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                       const store::RunStart& start) override;
    Result<std::optional<store::KeyedRun>> run_for_key(std::string_view key) override;
    Result<std::string> run_inputs(int64_t run) override;
    Result<std::vector<int64_t>> write_step(int64_t run, const store::StepWrite& step) override;
    Status journal_intent(int64_t run, const store::ToolIntent& intent, store::Flush flush) override;
    Result<std::optional<store::JournalEntry>> journal(int64_t run, std::string_view call_id) override;
    Status end_run(int64_t run, const store::RunEnd& end) override;
    Result<std::optional<store::RunRecord>> run(int64_t id) override;
    Result<std::vector<store::RunRecord>> runs(std::string_view conversation, int limit) override;
    Result<std::optional<store::RunRecord>> paused_run(std::string_view conversation) override;
    Result<std::vector<store::RunRecord>> interrupted_runs(int limit, std::optional<RunOrigin> origin) override;
    Result<std::optional<store::Checkpoint>> last_checkpoint(int64_t run) override;
    Result<std::vector<store::StoredMessage>> run_messages(int64_t run, int64_t from_id) override;
    Result<std::vector<store::StoredMessage>> exchanges(std::string_view conversation, int64_t before_turn, int turns) override;
    Result<std::vector<store::StoredMessage>> all(std::string_view conversation) override;
    Result<std::vector<store::ConversationSummary>> conversations(int limit) override;
    Result<std::optional<store::ConversationSummary>> conversation(std::string_view id) override;
    Result<bool> rename_conversation(std::string_view conversation, std::string_view title) override;
    Result<bool> delete_conversation(std::string_view conversation) override;
    Status claim(int64_t run) override;
    Status renew(int64_t run) override;
    Result<int> recover_interrupted() override;
    Result<int64_t> compact(int keep_runs, int keep_days) override;
    Result<store::JournalStats> stats() override;

private:
    store::Recovery recover();

    Session& session_;
    int lease_seconds_;
    std::string owner_;
};

}  // namespace agenthost::postgres
