// An in-memory run journal for tests of the agent loop: the RunJournal contract without SQLite,
// with failures injected where a test asks. run_journal_conformance_test.cpp holds it to the
// same behaviour as the SQLite journal, so the loop tests' journal cannot drift from the real one.
#pragma once

#include "store/run_journal.hpp"

#include <map>
#include <mutex>

namespace test {

class MemoryJournal final : public agenthost::store::RunJournal {
public:
    // The next `n` write_step calls succeed; the ones after fail like a full disk (negative: never).
    void fail_steps_after(int n) { steps_before_failure_ = n; }
    // From now on these reads fail as an unreadable store does: none, the tool journal's, the reads
    // a resume depends on (journal, paused_run, last_checkpoint, run_messages), or every read.
    enum class Reads { none, tool_journal, resume, every };
    void fail_reads(Reads which) {
        std::lock_guard lock(mutex_);
        failing_ = which;
    }
    // exchanges() alone fails from now on (what a turn pins), while `failing` holds.
    void fail_history(bool failing) {
        std::lock_guard lock(mutex_);
        failing_history_ = failing;
    }
    // What recover_interrupted() finds after the process running `run` died.
    void mark_interrupted(int64_t run);
    // How the intent of `call_id` in `run` was written (nullopt: never).
    std::optional<agenthost::store::Flush> intent_flush(int64_t run, std::string_view call_id);

    using agenthost::store::RunJournal::begin_run;
    agenthost::Result<agenthost::store::RunRecord> begin_run(std::string_view conversation, agenthost::Mode mode,
                                                             std::string_view provider, std::string_view prompt,
                                                             std::string_view prompt_body, std::string_view inputs_json,
                                                             const agenthost::store::RunStart& start) override;
    agenthost::Result<std::optional<agenthost::store::KeyedRun>> run_for_key(std::string_view key) override;
    agenthost::Result<std::string> run_inputs(int64_t run) override;
    agenthost::Result<std::vector<int64_t>> write_step(int64_t run, const agenthost::store::StepWrite& step) override;
    agenthost::Status journal_intent(int64_t run, const agenthost::store::ToolIntent& intent,
                                     agenthost::store::Flush flush) override;
    agenthost::Result<std::optional<agenthost::store::JournalEntry>> journal(int64_t run, std::string_view call_id) override;
    agenthost::Status end_run(int64_t run, const agenthost::store::RunEnd& end) override;
    agenthost::Result<std::optional<agenthost::store::RunRecord>> run(int64_t id) override;
    agenthost::Result<std::vector<agenthost::store::RunRecord>> runs(std::string_view conversation, int limit) override;
    agenthost::Result<std::vector<agenthost::store::RunRecord>> interrupted_runs(
        int limit, std::optional<agenthost::RunOrigin> origin) override;
    agenthost::Result<std::optional<agenthost::store::RunRecord>> paused_run(std::string_view conversation) override;
    agenthost::Result<std::optional<agenthost::store::Checkpoint>> last_checkpoint(int64_t run) override;
    agenthost::Result<std::vector<agenthost::store::StoredMessage>> run_messages(int64_t run, int64_t from_id) override;
    agenthost::Result<std::vector<agenthost::store::StoredMessage>> exchanges(std::string_view conversation, int64_t before_turn,
                                                                              int turns) override;
    agenthost::Result<std::vector<agenthost::store::StoredMessage>> all(std::string_view conversation) override;
    agenthost::Result<std::vector<agenthost::store::ConversationSummary>> conversations(int limit) override;
    agenthost::Result<std::optional<agenthost::store::ConversationSummary>> conversation(std::string_view id) override;
    agenthost::Result<bool> rename_conversation(std::string_view conversation, std::string_view title) override;
    agenthost::Result<bool> delete_conversation(std::string_view conversation) override;
    agenthost::Status claim(int64_t run) override;
    agenthost::Status renew(int64_t run) override;
    agenthost::Result<int> recover_interrupted() override;
    agenthost::Result<int64_t> compact(int keep_runs, int keep_days) override;
    agenthost::Result<agenthost::store::JournalStats> stats() override;

private:
    struct Run {
        agenthost::store::RunRecord record;
        agenthost::store::RunKey key;
        std::vector<agenthost::store::Checkpoint> checkpoints;
        std::string inputs;  // the run's inputs, as last written
        struct Call {
            agenthost::store::JournalEntry entry;
            std::string tool;
            std::string error_code;
            agenthost::store::Flush intent_flush = agenthost::store::Flush::now;
        };
        std::map<std::string, Call, std::less<>> journal;
    };
    int64_t append(Run& run, agenthost::store::MessageKind kind, const std::string& body, const std::string& result);
    // Records a call as started, unless it already finished.
    void start_call(Run& run, std::string_view call_id, std::string_view tool, agenthost::store::Flush flush);

    agenthost::store::ConversationSummary summary(const std::string& id) const;  // under mutex_
    // Ok while `run` may be written (store::may_write), else store_not_found or lease_lost; under mutex_.
    agenthost::Status writable(int64_t run, std::map<int64_t, Run>::iterator it) const;
    // Ok unless reads of level `level` are failing now; under mutex_.
    agenthost::Status readable(Reads level) const;

    std::mutex mutex_;
    std::map<int64_t, Run> runs_;
    // conversation → created_at, updated_at (a counter, so begin_run orders them as a clock would) and title
    std::map<std::string, agenthost::store::ConversationSummary, std::less<>> conversations_;
    double clock_ = 0;
    std::vector<agenthost::store::StoredMessage> messages_;  // every conversation's, in id order
    std::map<int64_t, std::string> message_conversation_;    // message id → conversation
    int64_t next_message_ = 1;
    int64_t next_run_ = 1;
    int steps_before_failure_ = -1;
    Reads failing_ = Reads::none;
    bool failing_history_ = false;
};

}  // namespace test
