// The run journal over any SQL backend: every read and write the SQLite and PostgreSQL journals
// share, written once over store::SqlConnection (the statements are in journal_sql). A backend
// says only how it reads and how it writes a transaction, and keeps what truly differs: recovery
// and claiming.
#pragma once

#include "store/journal_sql.hpp"
#include "store/run_journal.hpp"

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::store {

class SqlRunJournal : public RunJournal {
public:
    // `run_tables`: the tables keyed by run that go with a deleted conversation; `owner`: this
    // process's lease identity.
    SqlRunJournal(std::vector<std::string_view> run_tables, std::string owner, int lease_seconds);

    const std::string& owner() const { return owner_; }

    using RunJournal::begin_run;
    Result<RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider, std::string_view prompt,
                                std::string_view prompt_body, std::string_view inputs_json, const RunStart& start) override;
    Result<std::optional<KeyedRun>> run_for_key(std::string_view key) override;
    Result<std::string> run_inputs(int64_t run) override;
    Result<std::vector<int64_t>> write_step(int64_t run, const StepWrite& step) override;
    Status journal_intent(int64_t run, const ToolIntent& intent, Flush flush) override;
    Result<std::optional<JournalEntry>> journal(int64_t run, std::string_view call_id) override;
    Status end_run(int64_t run, const RunEnd& end) override;
    Result<std::optional<RunRecord>> run(int64_t id) override;
    Result<std::vector<RunRecord>> runs(std::string_view conversation, int limit) override;
    Result<std::optional<RunRecord>> paused_run(std::string_view conversation) override;
    Result<std::vector<RunRecord>> interrupted_runs(int limit, std::optional<RunOrigin> origin) override;
    Result<std::optional<Checkpoint>> last_checkpoint(int64_t run) override;
    Result<std::vector<StoredMessage>> run_messages(int64_t run, int64_t from_id) override;
    Result<std::vector<StoredMessage>> exchanges(std::string_view conversation, int64_t before_turn, int turns) override;
    Result<std::vector<StoredMessage>> all(std::string_view conversation) override;
    Result<std::vector<ConversationSummary>> conversations(int limit) override;
    Result<std::optional<ConversationSummary>> conversation(std::string_view id) override;
    Result<bool> rename_conversation(std::string_view conversation, std::string_view title) override;
    Result<bool> delete_conversation(std::string_view conversation) override;
    Status renew(int64_t run) override;
    Result<int> recover_interrupted() override;
    Result<int64_t> compact(int keep_runs, int keep_days) override;
    Result<JournalStats> stats() override;

protected:
    using SqlBody = std::function<Status(SqlConnection&)>;
    // Runs `body` on a connection for reading (no transaction): its Status, or why no connection
    // could be had.
    virtual Status with_read(const SqlBody& body) = 0;
    // Runs `body` in a write transaction, committed as `flush` says; a body that fails changes nothing.
    virtual Status with_write(const SqlBody& body, Flush flush) = 0;
    // One recovery pass (store::Recovery): finds the runs whose process is gone and marks them.
    virtual Recovery recover() = 0;

    // with_read / with_write for a body returning Result<T>.
    template <typename T, typename Body>
    Result<T> reading(Body&& body) {
        Result<T> out = Error{};
        Status s = with_read([&](SqlConnection& sql) -> Status {
            out = body(sql);
            return Ok{};
        });
        if (!s) return s.error();
        return out;
    }
    template <typename T, typename Body>
    Result<T> writing(Body&& body, Flush flush = Flush::now) {
        Result<T> out = Error{};
        Status s = with_write(
            [&](SqlConnection& sql) -> Status {
                out = body(sql);  // a body runs again when its write group failed: the last answer counts
                return out ? Status(Ok{}) : Status(out.error());
            },
            flush);
        if (!s) return s.error();
        return out;
    }

    int lease_seconds() const { return lease_seconds_; }

private:
    std::vector<std::string_view> run_tables_;
    std::string owner_;
    int lease_seconds_;
};

}  // namespace agenthost::store
