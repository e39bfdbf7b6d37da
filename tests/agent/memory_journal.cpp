#include "agent/memory_journal.hpp"

#include "store/run_owner.hpp"

#include <algorithm>
#include <set>

namespace test {

using namespace agenthost;
using namespace agenthost::store;

namespace {

// The first kPromptPreviewChars characters (UTF-8 code points) of a prompt, as the stores list it.
std::string preview(const std::string& prompt) {
    int chars = 0;
    for (size_t i = 0; i < prompt.size(); ++i)
        if ((static_cast<unsigned char>(prompt[i]) & 0xC0) != 0x80 && ++chars > kPromptPreviewChars) return prompt.substr(0, i);
    return prompt;
}

}  // namespace

int64_t MemoryJournal::append(Run& run, MessageKind kind, const std::string& body, const std::string& result) {
    int64_t id = next_message_++;
    messages_.push_back({id, run.record.turn, run.record.id, kind, body, result});
    ++run.record.messages;
    message_conversation_[id] = run.record.conversation;
    return id;
}

Result<RunRecord> MemoryJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                           std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                           const RunStart& start) {
    const RunKey& key = start.key;
    std::lock_guard lock(mutex_);
    if (auto problem = conversation_id_problem(conversation)) return Error{"invalid_conversation", *problem};
    if (!key.key.empty())
        for (const auto& [id, r] : runs_)
            if (r.key.key == key.key)
                return Error{"idempotency_key_used",
                             "run " + std::to_string(id) + " was already started with this Idempotency-Key"};
    int64_t turn = 0;
    for (const auto& [id, r] : runs_) {
        if (r.record.conversation != conversation) continue;
        if (r.record.status == RunStatus::running)
            return Error{"conversation_busy",
                         "conversation " + std::string(conversation) + " already has run " + std::to_string(id) + " running"};
        if (r.record.status == RunStatus::paused) return store::approval_pending(conversation, id);
        turn = std::max(turn, r.record.turn);
    }
    Run run;
    run.record.id = next_run_++;  // ids are not reused after a delete
    run.record.conversation = conversation;
    run.record.turn = turn + 1;
    run.record.status = RunStatus::running;
    run.record.origin = start.origin;
    run.record.model = start.model;
    run.record.after_turn = std::min(start.after_turn.value_or(turn), turn);
    run.record.mode = mode;
    run.record.provider = provider;
    run.record.prompt = prompt;
    run.record.started_at = run.record.updated_at = ++clock_;  // a logical clock: order is what tests compare
    run.inputs = inputs_json;
    run.key = key;
    auto& c = conversations_[std::string(conversation)];
    if (c.id.empty())
        c = {std::string(conversation), ++clock_, clock_, 0, "", store::title_from_prompt(prompt)};
    else
        c.updated_at = ++clock_;
    append(run, MessageKind::prompt, std::string(prompt_body), "");
    auto& stored = runs_[run.record.id] = std::move(run);
    store::RunRecord started = stored.record;
    started.prompt.clear();  // the caller has it (run_journal.hpp)
    return started;
}

Result<std::vector<int64_t>> MemoryJournal::write_step(int64_t run, const StepWrite& step) {
    std::lock_guard lock(mutex_);
    if (steps_before_failure_ == 0) return Error{"store_io", "disk I/O error (injected by the test)"};
    if (steps_before_failure_ > 0) --steps_before_failure_;
    auto it = runs_.find(run);
    if (Status st = writable(run, it); !st) return st.error();
    std::vector<int64_t> ids;
    for (const auto& m : step.messages) ids.push_back(append(it->second, m.kind, m.body, m.result));
    if (!step.journal_call_id.empty()) {
        auto& call = it->second.journal[step.journal_call_id];
        call.entry.status = CallStatus::done;
        call.entry.result = step.journal_result();
        call.error_code = step.journal_error_code;
    }
    if (step.intent) start_call(it->second, step.intent->call_id, step.intent->tool, step.flush);
    it->second.record.counters = step.counters;
    if (step.mode) it->second.record.mode = *step.mode;
    it->second.record.updated_at = ++clock_;
    int64_t last = next_message_ - 1;
    if (!step.inputs_json.empty()) it->second.inputs = step.inputs_json;
    it->second.checkpoints.push_back({static_cast<int64_t>(it->second.checkpoints.size()) + 1, last, step.state_json});
    return ids;
}

// The journal's one writer is this process (no owner is recorded): a run it may no longer write is
// one that is not running (recovered as interrupted, or ended), by the rule every journal follows.
Status MemoryJournal::writable(int64_t run, std::map<int64_t, Run>::iterator it) const {
    const bool found = it != runs_.end();
    return may_write(run, found, "", found ? run_status_name(it->second.record.status) : "", "");
}

Status MemoryJournal::journal_intent(int64_t run, const ToolIntent& intent, Flush flush) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run);
    if (Status st = writable(run, it); !st) return st;
    start_call(it->second, intent.call_id, intent.tool, flush);
    return Ok{};
}

std::optional<Flush> MemoryJournal::intent_flush(int64_t run, std::string_view call_id) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run);
    if (it == runs_.end()) return std::nullopt;
    auto call = it->second.journal.find(call_id);
    if (call == it->second.journal.end()) return std::nullopt;
    return call->second.intent_flush;
}

void MemoryJournal::start_call(Run& run, std::string_view call_id, std::string_view tool, Flush flush) {
    auto& journal = run.journal;
    if (auto e = journal.find(call_id); e == journal.end() || e->second.entry.status != CallStatus::done)
        journal[std::string(call_id)] = Run::Call{JournalEntry{CallStatus::started, ""}, std::string(tool), "", flush};
}

Result<std::optional<JournalEntry>> MemoryJournal::journal(int64_t run, std::string_view call_id) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::tool_journal); !st) return st.error();
    auto it = runs_.find(run);
    if (it == runs_.end()) return std::optional<JournalEntry>();
    auto e = it->second.journal.find(call_id);
    if (e == it->second.journal.end()) return std::optional<JournalEntry>();
    return std::optional<JournalEntry>(e->second.entry);
}

Status MemoryJournal::end_run(int64_t run, const RunEnd& end) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run);
    if (Status st = writable(run, it); !st) return st;
    RunRecord& r = it->second.record;
    for (const auto& m : end.messages) append(it->second, m.kind, m.body, m.result);
    if (!end.inputs_json.empty()) it->second.inputs = end.inputs_json;
    if (!end.state_json.empty())
        it->second.checkpoints.push_back(
            {static_cast<int64_t>(it->second.checkpoints.size()) + 1, next_message_ - 1, end.state_json});
    const StopInfo& info = stop_info(end.stop_reason);
    r.status = info.status;
    r.stop_reason = end.stop_reason;
    r.error_code = info.error_code;
    r.error = end.error;
    r.answer = end.answer;
    r.counters = end.counters;
    if (end.mode) r.mode = *end.mode;
    r.updated_at = r.ended_at = ++clock_;
    return Ok{};
}

Result<std::optional<RunRecord>> MemoryJournal::run(int64_t id) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    auto it = runs_.find(id);
    if (it == runs_.end()) return std::optional<RunRecord>();
    return std::optional<RunRecord>(it->second.record);
}

Result<std::vector<RunRecord>> MemoryJournal::runs(std::string_view conversation, int limit) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    std::vector<RunRecord> out;
    for (auto it = runs_.rbegin(); it != runs_.rend() && static_cast<int>(out.size()) < limit; ++it)
        if (conversation.empty() || it->second.record.conversation == conversation) out.push_back(it->second.record);
    return out;
}

Result<std::vector<RunRecord>> MemoryJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    std::map<std::string, int64_t> newest;
    for (const auto& [id, r] : runs_) newest[r.record.conversation] = id;
    std::vector<RunRecord> out;
    for (const auto& [id, r] : runs_)
        if ((r.record.status == RunStatus::interrupted ||
             (r.record.status == RunStatus::failed && r.record.stop_reason == StopReason::store_failure)) &&
            (!origin || r.record.origin == *origin) && newest[r.record.conversation] == id)
            out.push_back(r.record);
    std::stable_sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) { return a.updated_at < b.updated_at; });
    if (static_cast<int>(out.size()) > limit) out.resize(static_cast<size_t>(limit));
    return out;
}

Result<std::optional<RunRecord>> MemoryJournal::paused_run(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::resume); !st) return st.error();
    for (auto it = runs_.rbegin(); it != runs_.rend(); ++it)
        if (it->second.record.conversation == conversation && it->second.record.status == RunStatus::paused)
            return std::optional<RunRecord>(it->second.record);
    return std::optional<RunRecord>();
}

Result<std::string> MemoryJournal::run_inputs(int64_t run) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    auto it = runs_.find(run);
    return it == runs_.end() ? std::string() : it->second.inputs;
}

Result<std::optional<Checkpoint>> MemoryJournal::last_checkpoint(int64_t run) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::resume); !st) return st.error();
    auto it = runs_.find(run);
    if (it == runs_.end() || it->second.checkpoints.empty()) return std::optional<Checkpoint>();
    Checkpoint latest = it->second.checkpoints.back();
    latest.inputs_json = it->second.inputs;
    return std::optional<Checkpoint>(std::move(latest));
}

Result<std::vector<StoredMessage>> MemoryJournal::run_messages(int64_t run, int64_t from_id) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::resume); !st) return st.error();
    std::vector<StoredMessage> out;
    for (const auto& m : messages_)
        if (m.run == run && m.id >= from_id) out.push_back(m);
    return out;
}

Result<std::vector<StoredMessage>> MemoryJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    if (failing_history_) return Error{"store_sql", "the earlier turns could not be read (a test's injected fault)"};
    // The branch the run at before_turn follows, as the SQL backends walk it (journal_sql.cpp).
    auto follows = [&](int64_t turn) {
        for (const auto& [id, r] : runs_)
            if (r.record.conversation == conversation && r.record.turn == turn) return r.record.after_turn;
        return turn - 1;
    };
    std::set<int64_t> branch;
    for (int64_t turn = follows(before_turn); turn > 0 && std::ssize(branch) < turns; turn = follows(turn)) branch.insert(turn);
    std::vector<StoredMessage> out;
    for (const auto& m : messages_)
        if (message_conversation_[m.id] == conversation && branch.contains(m.turn) && m.kind != MessageKind::step)
            out.push_back(m);
    return out;
}

Result<std::vector<StoredMessage>> MemoryJournal::all(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    std::vector<StoredMessage> out;
    for (const auto& m : messages_)
        if (message_conversation_[m.id] == conversation) out.push_back(m);
    return out;
}

ConversationSummary MemoryJournal::summary(const std::string& id) const {
    ConversationSummary c = conversations_.find(id)->second;
    c.runs = 0;
    for (const auto& [run_id, r] : runs_)
        if (r.record.conversation == id) {
            c.runs += 1;
            c.last_prompt = preview(r.record.prompt);
        }
    return c;
}

Result<std::vector<ConversationSummary>> MemoryJournal::conversations(int limit) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    std::vector<ConversationSummary> out;
    for (const auto& [id, c] : conversations_) out.push_back(summary(id));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.updated_at > b.updated_at; });
    if (static_cast<int>(out.size()) > limit) out.resize(static_cast<size_t>(std::max(limit, 0)));
    return out;
}

Result<std::optional<ConversationSummary>> MemoryJournal::conversation(std::string_view id) {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    if (conversations_.find(id) == conversations_.end()) return std::optional<ConversationSummary>();
    return std::optional<ConversationSummary>(summary(std::string(id)));
}

Result<bool> MemoryJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    std::lock_guard lock(mutex_);
    auto it = conversations_.find(conversation);
    if (it == conversations_.end()) return false;
    it->second.title = title;  // updated_at stays: renaming is not activity
    return true;
}

Result<bool> MemoryJournal::delete_conversation(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    auto found = conversations_.find(conversation);
    bool existed = found != conversations_.end();
    if (existed) conversations_.erase(found);
    std::erase_if(runs_, [&](const auto& entry) { return entry.second.record.conversation == conversation; });
    std::erase_if(messages_, [&](const StoredMessage& m) { return message_conversation_[m.id] == conversation; });
    return existed;
}

Status MemoryJournal::claim(int64_t run) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run);
    if (it == runs_.end()) return Error{"store_not_found", "there is no run " + std::to_string(run)};
    if (!resumable(it->second.record)) return Error{"run_not_resumable", not_resumable_reason(it->second.record)};
    for (const auto& [id, other] : runs_)
        if (other.record.conversation == it->second.record.conversation && other.record.status == RunStatus::running)
            return conversation_busy(other.record.conversation, id);
    RunRecord& r = it->second.record;
    r.status = RunStatus::running;
    r.stop_reason.reset();
    r.error_code.clear();
    r.error.clear();
    return Ok{};
}

Result<std::optional<KeyedRun>> MemoryJournal::run_for_key(std::string_view key) {
    std::lock_guard lock(mutex_);
    for (const auto& [id, r] : runs_)
        if (!key.empty() && r.key.key == key) return std::optional<KeyedRun>(KeyedRun{id, r.key.print});
    return std::optional<KeyedRun>();
}

void MemoryJournal::mark_interrupted(int64_t run) {
    std::lock_guard lock(mutex_);
    if (auto it = runs_.find(run); it != runs_.end() && it->second.record.status == RunStatus::running) {
        it->second.record.status = RunStatus::interrupted;
        it->second.record.stop_reason = StopReason::interrupted;
        it->second.record.error_code = "INTERRUPTED";
        it->second.record.recoveries += 1;
    }
}

Status MemoryJournal::renew(int64_t) { return Ok{}; }
Result<int> MemoryJournal::recover_interrupted() { return 0; }

Status MemoryJournal::readable(Reads level) const {
    // Each level fails the reads of the levels before it too.
    if (failing_ == Reads::none || static_cast<int>(failing_) < static_cast<int>(level)) return Ok{};
    return Error{"store_sql", "the journal could not be read (a test's injected fault)"};
}
Result<int64_t> MemoryJournal::compact(int, int) { return int64_t{0}; }

Result<JournalStats> MemoryJournal::stats() {
    std::lock_guard lock(mutex_);
    if (Status st = readable(Reads::every); !st) return st.error();
    JournalStats out;
    std::map<std::string, int64_t> by_status;
    std::map<std::pair<std::string, std::string>, int64_t> calls;
    for (const auto& [id, r] : runs_) {
        ++by_status[std::string(run_status_name(r.record.status))];
        out.iterations += r.record.counters.iterations;
        out.input_tokens += r.record.counters.input_tokens;
        out.output_tokens += r.record.counters.output_tokens;
        for (const auto& [id, call] : r.journal) {
            std::string outcome = call.entry.status == CallStatus::started ? "unfinished"
                                  : call.error_code.empty()                ? "ok"
                                                                           : "error";
            ++calls[{call.tool, outcome}];
        }
    }
    out.runs_by_status.assign(by_status.begin(), by_status.end());
    for (const auto& [key, count] : calls) out.tool_calls.push_back({key.first, key.second, count});
    return out;
}

}  // namespace test
