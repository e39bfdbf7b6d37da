#include "postgres/pg_run_journal.hpp"

#include "postgres/pg_sql.hpp"
#include "store/idempotency_keys.hpp"
#include "store/journal_sql.hpp"
#include "store/run_owner.hpp"
#include "store/run_rows.hpp"

namespace agenthost::postgres {
using store::RunRecord;
using store::StoredMessage;

namespace {

const std::string kRunColumns = store::run_columns("(SELECT COUNT(*) FROM messages m WHERE m.run = runs.id)");

}  // namespace

PgRunJournal::PgRunJournal(Session& session, int lease_seconds, std::string owner)
    : session_(session), lease_seconds_(lease_seconds), owner_(std::move(owner)) {}

Result<RunRecord> PgRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                          std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                          const store::RunStart& start) {
    // A run left `running` by a dead process does not hold its conversation. Should marking it
    // fail, it still does, and the unique index makes begin_run say the conversation is busy.
    (void)recover_interrupted();
    const store::RunOpening opening{conversation, mode,  provider, prompt,        prompt_body,
                                    inputs_json,  start, owner_,   lease_seconds_};
    Result<RunRecord> opened = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) {
            PgSql sql(tx);
            return store::open_run(sql, opening);
        });
    });
    if (!opened && opened.error().code == "store_conflict") return store::opening_conflict(*this, opening);
    return opened;
}

Result<std::optional<store::KeyedRun>> PgRunJournal::run_for_key(std::string_view key) {
    std::optional<store::KeyedRun> found;
    Status s = session_.with([&](Connection& db) -> Status {
        auto row = db.exec(
            "SELECT id, COALESCE(idempotency_print, 0) FROM runs WHERE idempotency_key = $1 AND started_at >="
            " $2::double precision",
            {param(key), param(store::now_seconds() - store::IdempotencyKeys::kTtlSeconds)});
        if (!row) return row.error();
        if (!row->empty()) found = store::KeyedRun{row->integer(0, 0), static_cast<uint64_t>(row->integer(0, 1))};
        return Ok{};
    });
    if (!s) return s.error();
    return found;
}

Result<std::string> PgRunJournal::run_inputs(int64_t run) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::run_inputs(sql, run);
    });
}

Result<std::vector<int64_t>> PgRunJournal::write_step(int64_t run, const store::StepWrite& step) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Result<std::vector<int64_t>> {
            if (auto st = defer_flush(tx, step.flush); !st) return st.error();
            PgSql sql(tx);
            return store::write_step(sql, run, owner_, step, store::now_seconds() + lease_seconds_);
        });
    });
}

Status PgRunJournal::journal_intent(int64_t run, const store::ToolIntent& intent, store::Flush flush) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            PgSql sql(tx);
            return store::write_intent(sql, run, owner_, intent);
        });
    });
}

Result<std::optional<store::JournalEntry>> PgRunJournal::journal(int64_t run, std::string_view call_id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::journal_entry(sql, run, call_id);
    });
}

Status PgRunJournal::end_run(int64_t run, const store::RunEnd& end) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            return store::write_run_end(sql, run, owner_, end);
        });
    });
}

Result<std::optional<RunRecord>> PgRunJournal::run(int64_t id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::run_by_id(sql, kRunColumns, id);
    });
}

Result<std::vector<RunRecord>> PgRunJournal::runs(std::string_view conversation, int limit) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::newest_runs(sql, kRunColumns, conversation, limit);
    });
}

Result<std::vector<RunRecord>> PgRunJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::waiting_runs(sql, kRunColumns, limit, origin);
    });
}

Result<std::optional<RunRecord>> PgRunJournal::paused_run(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::paused_run(sql, kRunColumns, conversation);
    });
}

Result<std::optional<store::Checkpoint>> PgRunJournal::last_checkpoint(int64_t run) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::last_checkpoint(sql, run);
    });
}

Result<std::vector<StoredMessage>> PgRunJournal::run_messages(int64_t run, int64_t from_id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::run_messages(sql, run, from_id);
    });
}

Result<std::vector<StoredMessage>> PgRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::exchanges(sql, conversation, before_turn, turns);
    });
}

Result<std::vector<StoredMessage>> PgRunJournal::all(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::conversation_messages(sql, conversation);
    });
}

Result<std::vector<store::ConversationSummary>> PgRunJournal::conversations(int limit) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::conversation_summaries(sql, limit);
    });
}

Result<std::optional<store::ConversationSummary>> PgRunJournal::conversation(std::string_view id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::conversation_summary(sql, id);
    });
}

Result<bool> PgRunJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::rename_conversation(sql, conversation, title);
    });
}

Result<bool> PgRunJournal::delete_conversation(std::string_view conversation) {
    // Every row that names one of its runs goes with them: the tool journal, the events hosts
    // stream, cancel requests and the Idempotency-Keys that would name a run no more.
    static constexpr std::string_view kRunTables[] = {"tool_journal", "run_events", "run_cancels", "idempotency_keys"};
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) {
            PgSql sql(tx);
            return store::delete_conversation(sql, conversation, kRunTables);
        });
    });
}

Status PgRunJournal::claim(int64_t run) {
    if (auto refusal = store::unrecovered(recover(), run)) return *refusal;
    Result<bool> claimed = false;
    Status s = session_.with([&](Connection& db) -> Status {
        PgSql sql(db);
        claimed = store::claim_run(sql, run, owner_, lease_seconds_);
        if (claimed || claimed.error().code != "store_conflict") return Ok{};
        // Another run of its conversation is running: the unique index one_running_run refuses a second.
        auto owner = db.exec("SELECT conversation FROM runs WHERE id = $1::bigint", {param(run)});
        return store::conversation_busy(owner && !owner->empty() ? owner->text(0, 0) : "", 0);
    });
    if (!s) return s;
    if (!claimed) return claimed.error();
    if (*claimed) return Ok{};
    return store::claim_refusal(*this, run);
}

Status PgRunJournal::renew(int64_t run) {
    return session_.with([&](Connection& db) -> Status {
        PgSql sql(db);
        return store::renew_lease(sql, run, owner_, lease_seconds_);
    });
}

Result<int> PgRunJournal::recover_interrupted() {
    store::Recovery found = recover();
    if (!found.marked) return found.marked.error();
    return found.taken;
}

store::Recovery PgRunJournal::recover() {
    Result<store::Recovery> pass = session_.with([&](Connection& db) -> Result<store::Recovery> {
        PgSql sql(db);
        auto dead = store::abandoned_runs(sql, owner_);
        if (!dead) return store::Recovery{{}, dead.error(), 0};
        store::Recovery found;
        for (const store::AbandonedRun& run : *dead) {
            found.dead.push_back(run.id);
            // Recovered, so a host takes it over; the turn still holding it, if any, has its next
            // write refused (lease_lost). Each run is marked on its own: one refused leaves the others.
            auto marked = store::mark_interrupted(sql, run);
            if (!marked)
                found.marked = marked.error();
            else if (*marked)
                ++found.taken;
        }
        return found;
    });
    if (!pass) return {{}, pass.error(), 0};  // the database is out of reach
    return std::move(*pass);
}

Result<int64_t> PgRunJournal::compact(int keep_runs, int keep_days) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) {
            PgSql sql(tx);
            return store::compact_runs(sql, keep_runs, keep_days);
        });
    });
}

Result<store::JournalStats> PgRunJournal::stats() {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::journal_stats(sql);
    });
}

}  // namespace agenthost::postgres
