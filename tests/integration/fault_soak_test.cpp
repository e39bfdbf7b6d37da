// Store faults mixed under load (#41): clients that send an Idempotency-Key and retry with it keep
// asking while PostgreSQL restarts, a table cannot be read, a host is paused past its lease or
// killed in the middle of a takeover, SQLite's disk fills up or its serve is killed, and the newest
// conversation is deleted. At the end: one run per keyed request, every non-idempotent effect at
// most once, no run left for a person, no id given twice, every client answered. A soak: AGENTHOST_SOAK_TRIALS faults
// (scripts/soak --faults); the suite injects a few.
#include "postgres/pg_connection.hpp"
#include "support/free_port.hpp"
#include "support/postgres_server.hpp"
#include "integration/step_cassette.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <httplib.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

using namespace agenthost;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Each request's run: kSteps tool calls counted in the effects file (integration/step_cassette.hpp),
// tagged "[tN]".
constexpr int kSteps = 4;

std::string tag_of(int n) { return test::step_tag('t', n); }

json soak_cassette(const std::string& effects, int tags, int delay_ms) {
    return test::step_cassette(effects, 't', tags, kSteps, delay_ms);
}

// Faults per soak: AGENTHOST_SOAK_TRIALS (scripts/soak --faults sets it), else a few for the suite.
int soak_trials(int fallback) {
    const char* v = std::getenv("AGENTHOST_SOAK_TRIALS");
    return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

template <typename Predicate>
bool wait_until(Predicate done, std::chrono::milliseconds within) {
    for (auto deadline = Clock::now() + within; !done();) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One keyed request as its client saw it, from the first attempt to its final answer.
struct Ask {
    int tag = 0;
    int64_t run = 0;
    std::string conversation;
    std::string refusal;  // a final answer other than 200: "STATUS code: message"
    bool answered = false, whole = false, replayed = false, gave_up = false;
    int attempts = 0;
    double sent_at = 0, seconds = 0;  // since the load began; how long until its final answer
    std::string history;              // each attempt: "+SECONDS hHOST OUTCOME", repeats counted
};

// Clients, each sending one keyed POST /v1/chat/completions after another (request n carries the tag
// [tn] and the key soak-n), to the hosts in turn: an attempt that fails on a connection, a 5xx, a
// 429 or 409 idempotency_key_in_progress is sent again with the same key to the next host, after
// its Retry-After (at most 2 s) or 100 ms. Threads of their own; no Catch macro is used on them.
class Load {
public:
    Load(std::vector<int> ports, int capacity, int clients, uint32_t seed)
        : ports_(std::move(ports)), capacity_(capacity), epoch_(Clock::now()) {
        for (int i = 0; i < clients; ++i) threads_.emplace_back([this, i, seed] { client(seed + static_cast<uint32_t>(i)); });
    }
    ~Load() {
        finishing_ = true;
        give_up_ = true;
        for (auto& t : threads_) t.join();
    }
    Load(const Load&) = delete;
    Load& operator=(const Load&) = delete;

    void finish() { finishing_ = true; }        // no new requests; those under way go on to their answer
    void give_up() { give_up_ = true; }         // the ones still waiting stop
    void hold(bool on) { holding_ = on; }       // no new requests until released
    bool idle() const { return active_ == 0; }  // no request under way
    bool done() const { return finished_clients_ == static_cast<int>(threads_.size()); }
    int answered() const {
        std::lock_guard lock(mutex_);
        return static_cast<int>(std::count_if(asks_.begin(), asks_.end(), [](const Ask& a) { return a.answered; }));
    }
    std::vector<Ask> asks() const {
        std::lock_guard lock(mutex_);
        return asks_;
    }
    std::map<std::string, int> retries() const {
        std::lock_guard lock(mutex_);
        return retries_;
    }
    double since_start() const { return seconds_since(epoch_); }
    bool ran_out() const { return next_tag_ >= capacity_; }
    int issued() const { return std::min<int>(next_tag_, capacity_); }

private:
    void client(uint32_t seed) {
        std::mt19937 random(seed);
        while (!finishing_) {
            ++active_;
            if (holding_) {
                --active_;
                std::this_thread::sleep_for(milliseconds(20));
                continue;
            }
            int tag = next_tag_++;
            if (tag >= capacity_) {  // the cassette has no rules for more
                --active_;
                break;
            }
            Ask a = ask(tag, random() % ports_.size());
            {
                std::lock_guard lock(mutex_);
                asks_.push_back(a);
            }
            --active_;
        }
        ++finished_clients_;
    }

    Ask ask(int tag, size_t first) {
        Ask a;
        a.tag = tag;
        const std::string key = "soak-" + std::to_string(tag);
        const std::string body =
            json{{"model", "agenthost"}, {"messages", {{{"role", "user"}, {"content", "work " + tag_of(tag)}}}}}.dump();
        const auto began = Clock::now();
        a.sent_at = std::chrono::duration<double>(began - epoch_).count();
        std::string last;  // the previous attempt's host and outcome, and how often in a row
        int repeats = 0;
        auto note = [&](size_t host, const std::string& outcome) {
            std::string what = "h" + std::to_string(host) + " " + outcome;
            if (what == last) {
                ++repeats;
                return;
            }
            if (repeats > 1) a.history += " ×" + std::to_string(repeats);
            char at[32];
            std::snprintf(at, sizeof at, "%s+%.1f ", a.history.empty() ? "" : "; ", seconds_since(began));
            a.history += at + what;
            last = what;
            repeats = 1;
        };
        for (size_t attempt = 0;; ++attempt) {
            if (give_up_) {
                a.gave_up = true;
                break;
            }
            const size_t host = (first + attempt) % ports_.size();
            httplib::Client c("127.0.0.1", ports_[host]);
            c.set_connection_timeout(2, 0);
            c.set_read_timeout(15, 0);  // a paused host answers once it runs again
            c.set_write_timeout(5, 0);
            auto r = c.Post("/v1/chat/completions", httplib::Headers{{"Idempotency-Key", key}}, body, "application/json");
            ++a.attempts;
            std::string reason;
            double wait = 0.1;
            if (!r) {
                reason = "connection: " + httplib::to_string(r.error());
            } else if (r->status == 200) {
                note(host, "200");
                json answer = json::parse(r->body, nullptr, false);
                a.answered = true;
                a.replayed = r->get_header_value("Idempotent-Replayed") == "true";
                if (answer.is_object()) {
                    a.run = answer.value("/agenthost/run"_json_pointer, int64_t{0});
                    a.conversation = answer.value("conversation", "");
                    std::string content = answer.value("/choices/0/message/content"_json_pointer, std::string());
                    a.whole = content.find("all done for " + tag_of(tag)) != std::string::npos;
                }
                break;
            } else {
                json error = json::parse(r->body, nullptr, false);
                std::string code = error.is_object() ? error.value("/error/code"_json_pointer, std::string()) : "";
                reason = std::to_string(r->status) + " " + code;
                bool again = r->status >= 500 || r->status == 429 || (r->status == 409 && code == "idempotency_key_in_progress");
                if (!again) {
                    note(host, reason);
                    a.refusal = reason + ": " + r->body.substr(0, 300);
                    break;
                }
                if (auto after = r->get_header_value("Retry-After"); !after.empty())
                    wait = std::min(std::atof(after.c_str()), 2.0);
            }
            note(host, reason);
            {
                std::lock_guard lock(mutex_);
                ++retries_[reason];
            }
            for (auto until = Clock::now() + milliseconds(static_cast<int>(wait * 1000)); Clock::now() < until && !give_up_;)
                std::this_thread::sleep_for(milliseconds(20));
        }
        if (repeats > 1) a.history += " ×" + std::to_string(repeats);
        a.seconds = seconds_since(began);
        return a;
    }

    const std::vector<int> ports_;
    const int capacity_;
    const Clock::time_point epoch_;
    std::atomic<bool> finishing_{false}, give_up_{false}, holding_{false};
    std::atomic<int> next_tag_{0}, active_{0}, finished_clients_{0};
    mutable std::mutex mutex_;
    std::vector<Ask> asks_;
    std::map<std::string, int> retries_;
    std::vector<std::thread> threads_;
};

// Rows of a query on the soak's database, as text: `columns` of each.
using Table = std::vector<std::vector<std::string>>;
using Query = std::function<Table(const std::string& sql, int columns)>;

Table postgres_rows(const std::string& url, const std::string& sql, int columns) {
    auto db = postgres::Connection::open(url);
    INFO((db ? "" : db.error().message));
    REQUIRE(db);
    auto rows = (*db)->exec(sql);
    INFO(sql << ": " << (rows ? "" : rows.error().message));
    REQUIRE(rows);
    Table out;
    for (int r = 0; r < rows->size(); ++r) {
        std::vector<std::string> row;
        row.reserve(static_cast<size_t>(columns));
        for (int c = 0; c < columns; ++c) row.push_back(rows->text(r, c));
        out.push_back(std::move(row));
    }
    return out;
}

// SQLite's own VFS, but taking a path as given: the default one resolves symbolic links, and
// /proc/PID/root (how this process reaches serve's tmpfs in serve's mount namespace) would resolve
// to this process's own "/".
const char* literal_paths_vfs() {
    static const char* name = [] {
        static sqlite3_vfs vfs = *sqlite3_vfs_find(nullptr);
        vfs.zName = "soak-literal-paths";
        vfs.xFullPathname = [](sqlite3_vfs*, const char* path, int size, char* out) {
            sqlite3_snprintf(size, out, "%s", path);
            return SQLITE_OK;
        };
        sqlite3_vfs_register(&vfs, 0);
        return vfs.zName;
    }();
    return name;
}

// `file`: serve's database as its mount namespace shows it (/proc/PID/root/…), read beside serve.
Table sqlite_rows(const std::string& file, const std::string& sql, int columns) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, literal_paths_vfs());
    INFO(file << ": " << sqlite3_errmsg(db));
    REQUIRE(rc == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
    INFO(sql << ": " << sqlite3_errmsg(db));
    Table out;
    while (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int c = 0; c < columns; ++c) {
            const unsigned char* text = sqlite3_column_text(stmt, c);
            row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
        }
        out.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
    return out;
}

// A conversation deleted under the soak.
struct Deletion {
    int tag = 0;
    int64_t run = 0;
    std::string conversation;
    bool newest = false;  // its run had the highest id when it was deleted
    int issued = 0;       // requests sent before the delete had its answer: the later ones' runs are newer
};

// A client waiting longer than this for its final answer is reported with its story.
constexpr double kSlow = 20;

// What the soak did and found.
struct Figures {
    std::vector<std::pair<std::string, int>> faults;  // by kind, in the order first injected
    std::map<std::string, int> detail;                // what the faults met: sub-kinds, takeovers, deletes
    int requests = 0, runs = 0, deleted_runs = 0, resumed = 0, recoveries = 0, unknown = 0;
    int lost = 0, twice = 0, left_for_a_person = 0, ids_reused = 0, keys_with_two_runs = 0, runs_without_key = 0;
    int answered = 0, replayed = 0, after_retries = 0, refused = 0, gave_up = 0;
    double longest_wait = 0, wall = 0;
    std::map<std::string, int> retries, refusals;
    std::vector<std::string> findings;                     // each thing found wrong, with its run and request
    std::vector<std::string> slow;                         // requests answered after more than kSlow, with their story
    std::vector<std::pair<double, std::string>> timeline;  // each fault: when (since the load began), what

    void note(const std::ostream& what) { findings.push_back(static_cast<const std::ostringstream&>(what).str()); }

    void fault(const std::string& kind) {
        auto it = std::find_if(faults.begin(), faults.end(), [&](const auto& f) { return f.first == kind; });
        if (it == faults.end())
            faults.emplace_back(kind, 1);
        else
            ++it->second;
    }
    int total_faults() const {
        int n = 0;
        for (const auto& f : faults) n += f.second;
        return n;
    }
    void print(const char* front) const {
        std::printf("fault soak (%s): %d faults in %.0f s —", front, total_faults(), wall);
        for (size_t i = 0; i < faults.size(); ++i)
            std::printf("%s %d %s", i ? "," : "", faults[i].second, faults[i].first.c_str());
        std::printf(
            "\n  %d keyed requests, %d runs (+%d deleted); runs resumed by a host %d times (found abandoned %d times); "
            "%d lost, %d effects twice, %d left for a person, %d ids reused, %d keys with two runs, %d runs without a key; "
            "%d non-idempotent calls reported outcome unknown\n",
            requests, runs, deleted_runs, resumed, recoveries, lost, twice, left_for_a_person, ids_reused, keys_with_two_runs,
            runs_without_key, unknown);
        std::printf("  clients: %d answered 200 (%d after retries, %d replayed), %d refused, %d gave up; longest wait %.1f s\n",
                    answered, after_retries, replayed, refused, gave_up, longest_wait);
        for (const auto& [what, n] : detail) std::printf("  %s: %d\n", what.c_str(), n);
        for (const auto& [why, n] : retries) std::printf("  retried after %s: %d\n", why.c_str(), n);
        for (const auto& [why, n] : refusals) std::printf("  refused %s: %d\n", why.c_str(), n);
        for (const auto& request : slow) std::printf("  slow: %s\n", request.c_str());
        for (const auto& finding : findings) std::printf("  found: %s\n", finding.c_str());
        std::fflush(stdout);
    }
};

// The soak's files: effects (outside any data dir, so a full disk never loses one), cassette, config.
struct Soak {
    test::TempDir dir;
    std::string effects, data, config;
    int capacity;
    Figures figures;
    std::vector<Deletion> deletions;
    std::vector<std::string> logs;  // of every serve: "resumed run:" lines are counted
    std::mt19937 random;

    // `store`: the [store] table's settings.
    Soak(int trials, uint32_t seed, const std::string& store) : capacity(80 + trials * 50), random(seed) {
        effects = (dir.path / "effects.txt").string();
        data = (dir.path / "data").string();
        test::write_file(dir.path / "cassette.json", soak_cassette(effects, capacity, 30).dump());
        config = (dir.path / "agenthost.toml").string();
        test::write_file(config,
                         "data_dir = \"" + data +
                             "\"\ndefault_plugin_dirs = false\nlog_level = \"info\"\n"
                             "enabled_plugins = [\"scripted\", \"agent_tools\"]\n"
                             "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                             "\"]\n"
                             "[provider]\nuse = \"scripted\"\n"
                             "[plugins.scripted]\ncassette = \"" +
                             (dir.path / "cassette.json").string() + "\"\n[store]\n" + store + "\n[server]\nauth = \"none\"\n");
        std::filesystem::create_directories(data);
    }

    int between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); }

    // A fault, counted by kind and kept in the timeline with what it hit.
    void mark(const Load& load, const std::string& kind, const std::string& what) {
        figures.fault(kind);
        figures.timeline.emplace_back(load.since_start(), what);
    }

    // Deletes the conversation of the newest answered request. `quiet`: first lets every request
    // under way end (no new ones start meanwhile), so that conversation holds the highest run id and
    // a store that gave ids as max + 1 would give it again.
    void delete_newest(Load& load, const std::vector<int>& ports, const Query& query, bool quiet) {
        if (quiet) {
            load.hold(true);
            if (!wait_until([&] { return load.idle(); }, std::chrono::seconds(30))) quiet = false;
        }
        std::set<int> gone;
        for (const auto& d : deletions) gone.insert(d.tag);
        Deletion d;
        for (const Ask& a : load.asks())
            if (a.answered && a.run > d.run && !gone.count(a.tag)) d = Deletion{a.tag, a.run, a.conversation};
        if (d.run == 0) {
            load.hold(false);
            ++figures.detail["deletes with nothing answered to delete"];
            return;
        }
        d.newest = query("SELECT MAX(id) FROM runs", 1)[0][0] == std::to_string(d.run);
        httplib::Client c("127.0.0.1", ports[static_cast<size_t>(between(0, static_cast<int>(ports.size()) - 1))]);
        c.set_read_timeout(15, 0);
        mark(load, "conversations deleted", "conversation of run " + std::to_string(d.run) + " deleted");
        auto r = c.Delete("/api/conversations/" + d.conversation);
        d.issued = load.issued();
        load.hold(false);
        if (!r || r->status != 204) {
            ++figures.detail["deletes refused (" + (r ? std::to_string(r->status) : httplib::to_string(r.error())) + ")"];
            return;
        }
        if (d.newest) ++figures.detail["deletes of the run with the highest id"];
        if (quiet) ++figures.detail["deletes with no run in flight"];
        deletions.push_back(std::move(d));
    }

    // After the faults: every client's request to its end (patience: an Idempotency-Key left in
    // progress by a request its host lost before the run started is free again after 60 s), then
    // every run settled; then the checks.
    void settle_and_verify(Load& load, const Query& query, const std::string& key_column_sql, Clock::time_point began) {
        load.finish();
        bool clients_done = wait_until([&] { return load.done(); }, std::chrono::seconds(150));
        load.give_up();
        wait_until([&] { return load.done(); }, std::chrono::seconds(20));
        INFO("every client had its final answer: " << clients_done);
        wait_until([&] { return query("SELECT COUNT(*) FROM runs WHERE status <> 'completed'", 1)[0][0] == "0"; },
                   std::chrono::seconds(clients_done ? 30 : 1));
        figures.wall = seconds_since(began);
        verify(load, query, key_column_sql);
    }

    void verify(const Load& load, const Query& query, const std::string& key_column_sql) {
        Figures& f = figures;
        CHECK(query(key_column_sql, 1)[0][0] == "1");  // runs.idempotency_key exists

        // Clients.
        const std::vector<Ask> asks = load.asks();
        f.requests = static_cast<int>(asks.size());
        for (const Ask& a : asks) {
            f.answered += a.answered;
            f.replayed += a.replayed;
            f.after_retries += a.answered && a.attempts > 1;
            f.gave_up += a.gave_up;
            f.longest_wait = std::max(f.longest_wait, a.seconds);
            if (!a.refusal.empty()) {
                ++f.refused;
                ++f.refusals[a.refusal.substr(0, a.refusal.find(':'))];
                f.note(std::ostringstream() << "request " << tag_of(a.tag) << " refused: " << a.refusal);
            }
            if (a.gave_up)
                f.note(std::ostringstream() << "request " << tag_of(a.tag) << " had no final answer after " << a.seconds << " s");
            if (a.answered && !a.whole) {
                ++f.lost;  // a 200 that is not its run's answer
                f.note(std::ostringstream() << "request " << tag_of(a.tag) << " answered 200 without its run's answer, run "
                                            << a.run);
            }
        }
        f.retries = load.retries();
        auto count = [](const std::string& text, const std::string& needle) {
            int n = 0;
            for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
            return n;
        };
        for (const auto& log : logs) {
            std::string text = test::read_file(log);
            f.resumed += count(text, "resumed run:");
            // A request that started no run whose key could not be let go (the database out of reach):
            // retries of it are answered 409 until the key counts as abandoned.
            if (int n = count(text, "idempotency key not released")) f.detail["keys not released (host log)"] += n;
        }
        for (const Ask& a : asks) {
            if (a.seconds < kSlow) continue;
            std::ostringstream story;
            char head[96];
            std::snprintf(head, sizeof head, "%s sent at +%.1f s, its final answer after %.1f s: ", tag_of(a.tag).c_str(),
                          a.sent_at, a.seconds);
            story << head << a.history << "; faults from 5 s before:";
            for (const auto& [at, what] : f.timeline)
                if (at >= a.sent_at - 5 && at <= a.sent_at + a.seconds) {
                    char when[32];
                    std::snprintf(when, sizeof when, " +%.1f s ", at);
                    story << when << what << ";";
                }
            f.slow.push_back(story.str());
        }

        // Runs: one per keyed request (a deleted conversation took its run along), each in its own
        // conversation, each settled.
        std::set<int> deleted_tags;
        for (const auto& d : deletions) deleted_tags.insert(d.tag);
        f.deleted_runs = static_cast<int>(deletions.size());
        const Table runs = query(
            "SELECT id, conversation, status, COALESCE(idempotency_key, ''), COALESCE(stop_reason, ''), COALESCE(error, ''), "
            "recoveries FROM runs ORDER BY id",
            7);
        f.runs = static_cast<int>(runs.size());
        std::map<std::string, int> per_key, per_conversation;
        std::map<int, int64_t> run_of_tag;
        for (const auto& row : runs) {
            const int64_t id = std::stoll(row[0]);
            const std::string& key = row[3];
            f.recoveries += std::stoi(row[6]);
            ++per_conversation[row[1]];
            if (key.empty()) {
                ++f.runs_without_key;
            } else if (++per_key[key] == 2) {
                ++f.keys_with_two_runs;
            }
            const std::string prefix = "completions\nsoak-";
            if (key.rfind(prefix, 0) == 0) run_of_tag[std::stoi(key.substr(prefix.size()))] = id;
            if (row[2] != "completed") {
                ++f.left_for_a_person;
                f.note(std::ostringstream() << "run " << id << " left " << row[2] << " (" << row[4] << ": " << row[5] << ")");
            }
            for (const auto& d : deletions)
                if (id == d.run || row[1] == d.conversation) {
                    ++f.ids_reused;
                    f.note(std::ostringstream() << "run " << id << " in conversation " << row[1]
                                                << " reuses an id deleted with run " << d.run << " (" << d.conversation << ")");
                }
        }
        for (const auto& [conversation, n] : per_conversation)
            if (n > 1) {
                ++f.ids_reused;  // every request started a conversation of its own
                f.note(std::ostringstream() << "conversation " << conversation << " holds " << n << " runs");
            }
        for (const Ask& a : asks) {
            if (deleted_tags.count(a.tag)) continue;
            auto it = run_of_tag.find(a.tag);
            if (it == run_of_tag.end()) {
                ++f.lost;
                f.note(std::ostringstream() << "request " << tag_of(a.tag) << " has no run");
            } else if (a.answered && it->second != a.run) {
                ++f.lost;
                f.note(std::ostringstream() << "request " << tag_of(a.tag) << " was answered with run " << a.run
                                            << ", its key holds run " << it->second);
            }
            if (it != run_of_tag.end())
                for (const auto& d : deletions)
                    if (a.tag >= d.issued && it->second <= d.run) {
                        ++f.ids_reused;  // ids only grow: a run started after a delete is newer than the deleted one
                        f.note(std::ostringstream() << "request " << tag_of(a.tag) << ", sent after run " << d.run
                                                    << " was deleted, got run " << it->second);
                    }
        }

        // Effects: each step of each request once, but for a non-idempotent call reported to the model
        // as "outcome unknown" (then at most once); no tool call with two results.
        std::set<std::pair<int, int>> unknown;
        std::map<std::pair<std::string, std::string>, int> results_per_call;
        const std::regex step_of(R"(\[t(\d+)\] step=(\d+);)");
        for (const auto& row : query("SELECT run, body, COALESCE(result, '') FROM messages WHERE run IS NOT NULL", 3)) {
            json body = json::parse(row[1], nullptr, false);
            if (!body.is_object() || body.value("role", "") != "tool") continue;
            ++results_per_call[{row[0], body.value("tool_call_id", "")}];
            json result = json::parse(row[2], nullptr, false);
            std::smatch m;
            std::string content = result.is_object() ? result.value("content", "") : "";
            if (result.is_object() && result.value("error_code", "") == "outcome_unknown" &&
                std::regex_search(content, m, step_of))
                unknown.insert({std::stoi(m[1]), std::stoi(m[2])});
        }
        f.unknown = static_cast<int>(unknown.size());
        for (const auto& [call, n] : results_per_call)
            if (n > 1) {
                ++f.twice;
                f.note(std::ostringstream() << "run " << call.first << ": tool call " << call.second << " has " << n
                                            << " results");
            }
        std::map<std::pair<int, int>, int> seen;
        std::istringstream lines(test::read_file(effects));
        for (std::string line; std::getline(lines, line);) {
            std::smatch m;
            if (std::regex_search(line, m, step_of)) ++seen[{std::stoi(m[1]), std::stoi(m[2])}];
        }
        for (const Ask& a : asks)
            for (int i = 0; i < kSteps; ++i) {
                int n = seen[{a.tag, i}];
                if (n > 1) {
                    ++f.twice;
                    f.note(std::ostringstream() << tag_of(a.tag) << " step " << i << " happened " << n << " times");
                }
                // A deleted run's transcript is gone, and with it what was reported unknown.
                bool may_be_missing = deleted_tags.count(a.tag) || (i % 2 == 0 && unknown.count({a.tag, i}));
                if (n == 0 && !may_be_missing) {
                    ++f.lost;
                    f.note(std::ostringstream()
                           << tag_of(a.tag) << " step " << i << " never happened, and was not reported unknown");
                }
            }
        for (const auto& [tag, step] : unknown)
            if (step % 2) {
                ++f.lost;  // an idempotent call is run again, never reported unknown
                f.note(std::ostringstream() << tag_of(tag) << " step " << step << " (idempotent) was reported unknown");
            }

        std::string found;
        for (const auto& finding : f.findings) found += finding + "\n";
        INFO(found);
        CHECK(f.runs + f.deleted_runs == f.requests);
        CHECK(f.lost == 0);
        CHECK(f.twice == 0);
        CHECK(f.left_for_a_person == 0);
        CHECK(f.ids_reused == 0);
        CHECK(f.keys_with_two_runs == 0);
        CHECK(f.runs_without_key == 0);
        CHECK(f.refused == 0);
        CHECK(f.gave_up == 0);
        CHECK(f.answered == f.requests);
        CHECK_FALSE(load.ran_out());  // the cassette had rules for every request
    }
};

std::string read_from(const std::string& file, size_t offset) {
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

size_t size_of(const std::string& file) {
    std::error_code ec;
    auto n = std::filesystem::file_size(file, ec);
    return ec ? 0 : static_cast<size_t>(n);
}

// `agenthost serve` on PostgreSQL, its output appended to its log across restarts. `machine`: a
// host name of its own (a UTS namespace), so the others judge it as a host on another machine — by
// its lease alone. (A host on the same machine is judged by its process: a live one keeps its
// runs, however long its lease has lapsed; a paused host would test nothing.)
struct Host {
    int port = test::free_port();
    std::string config, url, log, machine;
    std::unique_ptr<test::Process> process;
    Host(std::string config_file, std::string database, std::string log_file, std::string machine_name)
        : config(std::move(config_file)), url(std::move(database)), log(std::move(log_file)), machine(std::move(machine_name)) {
        start();
    }
    ~Host() {
        if (process && process->pid > 0) ::kill(process->pid, SIGCONT);  // then SIGTERM from Process
    }
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

    void start() {
        std::string serve = "exec '" + std::string(test::cli()) + "' --config '" + config +
                            "' serve --listen 127.0.0.1:" + std::to_string(port) + " >> '" + log + "' 2>&1";
        std::vector<std::string> args{"sh", "-c", serve};
        if (!machine.empty()) args = {"unshare", "-u", "sh", "-c", "hostname '" + machine + "' && " + serve};
        process = std::make_unique<test::Process>(args, std::vector<std::pair<std::string, std::string>>{{"TEST_PG_URL", url}});
        INFO(read_from(log, 0));
        REQUIRE(process->wait_for_port(port));
    }
    void kill() {
        ::kill(process->pid, SIGKILL);
        ::waitpid(process->pid, nullptr, 0);
        process->pid = -1;
    }
};

// The tables a host cannot do without, made unreadable for a moment as an operator's migration
// would: `runs` locked (every statement on it waits), or `idempotency_keys` or `runs` renamed away
// (every statement on it fails). The hosts connect as the database's owner, a superuser: a REVOKE
// would not bite them.
void make_unreadable(const std::string& url, int which, milliseconds hold) {
    auto admin = postgres::Connection::open(url);
    INFO((admin ? "" : admin.error().message));
    REQUIRE(admin);
    auto& db = **admin;
    REQUIRE(db.exec("SET lock_timeout = '5s'"));
    if (which == 0) {
        REQUIRE(db.exec("BEGIN"));
        auto locked = db.exec("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE");
        INFO((locked ? "" : locked.error().message));
        REQUIRE(locked);
        std::this_thread::sleep_for(hold);
        REQUIRE(db.exec("COMMIT"));
        return;
    }
    const std::string table = which == 1 ? "idempotency_keys" : "runs";
    auto away = db.exec("ALTER TABLE " + table + " RENAME TO " + table + "_away");
    INFO((away ? "" : away.error().message));
    REQUIRE(away);
    std::this_thread::sleep_for(hold);
    bool back = wait_until([&] { return static_cast<bool>(db.exec("ALTER TABLE " + table + "_away RENAME TO " + table)); },
                           std::chrono::seconds(30));
    REQUIRE(back);
}

constexpr int kPgLeaseSeconds = 2;

}  // namespace

TEST_CASE("fault soak: three hosts on PostgreSQL through database restarts, unreadable tables, paused and killed hosts, deletes",
          "[peer][faults][soak][postgres]") {
    if (test::postgres_bin_dir().empty()) {
        WARN("skipped: PostgreSQL is not installed (scripts/install-deps installs the postgresql package)");
        return;
    }
    const int trials = soak_trials(5);
    Soak soak(trials, 20261205,
              "backend = \"postgresql\"\nurl_env = \"TEST_PG_URL\"\nlease_seconds = " + std::to_string(kPgLeaseSeconds));
    const std::string url = test::fresh_postgres_database();
    // Three machines, as far as the hosts can tell, where a UTS namespace can be made (root, as in CI).
    const bool machines = test::run_command("unshare -u true").exit_code == 0;
    if (!machines) WARN("the hosts share this machine's name (no UTS namespace here): a paused host keeps its runs");
    std::vector<std::unique_ptr<Host>> hosts;
    hosts.reserve(3);
    for (int i = 0; i < 3; ++i)
        hosts.push_back(std::make_unique<Host>(soak.config, url,
                                               (soak.dir.path / ("host-" + std::to_string(i) + ".log")).string(),
                                               machines ? "soak-host-" + std::to_string(i) : ""));
    std::vector<int> ports;
    for (const auto& h : hosts) {
        ports.push_back(h->port);
        soak.logs.push_back(h->log);
    }
    const Query query = [&](const std::string& sql, int columns) { return postgres_rows(url, sql, columns); };
    auto logs = [&](std::vector<size_t>& at) {
        at.clear();
        for (const auto& h : hosts) at.push_back(size_of(h->log));
    };
    // The host executing the most runs (a lease owner is "HOSTNAME:PID:START"), so the fault bites.
    auto busiest = [&] {
        std::map<size_t, int> runs;
        for (const auto& row : query("SELECT lease_owner FROM runs WHERE status = 'running' AND lease_owner IS NOT NULL", 1)) {
            size_t end = row[0].rfind(':'), begin = end == std::string::npos ? end : row[0].rfind(':', end - 1);
            if (begin == std::string::npos) continue;
            int pid = std::atoi(row[0].substr(begin + 1, end - begin - 1).c_str());
            for (size_t i = 0; i < hosts.size(); ++i)
                if (hosts[i]->process->pid == pid) ++runs[i];
        }
        size_t pick = static_cast<size_t>(soak.between(0, static_cast<int>(hosts.size()) - 1));
        int most = runs.count(pick) ? runs[pick] : 0;
        for (const auto& [i, n] : runs)
            if (n > most) {
                pick = i;
                most = n;
            }
        return pick;
    };
    auto takeovers_since = [&](const std::vector<size_t>& at, size_t except) {
        int n = 0;
        for (size_t i = 0; i < hosts.size(); ++i) {
            if (i == except) continue;
            std::string text = read_from(hosts[i]->log, at[i]);
            for (size_t p = text.find("resumed run:"); p != std::string::npos; p = text.find("resumed run:", p + 1)) ++n;
        }
        return n;
    };

    const auto began = Clock::now();
    Load load(ports, soak.capacity, 6, 7);
    REQUIRE(wait_until([&] { return load.answered() >= 3; }, std::chrono::seconds(30)));  // under load from here on
    for (int trial = 0; trial < trials; ++trial) {
        INFO("fault " << trial);
        std::this_thread::sleep_for(milliseconds(soak.between(300, 1500)));  // runs under way at a random moment
        switch (trial % 5) {
            case 0: {  // PostgreSQL restarted (a fast shutdown: sessions cut), down for a moment
                int down = soak.between(200, 2000);
                soak.mark(load, "database restarts", "database down " + std::to_string(down) + " ms");
                test::stop_postgres();
                std::this_thread::sleep_for(milliseconds(down));
                test::restart_postgres();
                break;
            }
            case 1: {
                int which = (trial / 5) % 3, hold = soak.between(500, 2000);
                std::string how = which == 0 ? "runs locked" : which == 1 ? "idempotency_keys renamed away" : "runs renamed away";
                soak.mark(load, "tables unreadable", how + " " + std::to_string(hold) + " ms");
                make_unreadable(url, which, milliseconds(hold));
                ++soak.figures.detail["tables unreadable: " + how];
                break;
            }
            case 2: {  // a host paused (SIGSTOP) past its lease, then let go on
                size_t i = busiest();
                int hold = kPgLeaseSeconds * 1000 + soak.between(1000, 2000);
                std::vector<size_t> at;
                logs(at);
                soak.mark(load, "hosts paused past their lease",
                          "host " + std::to_string(i) + " paused " + std::to_string(hold) + " ms");
                ::kill(hosts[i]->process->pid, SIGSTOP);
                std::this_thread::sleep_for(milliseconds(hold));
                ::kill(hosts[i]->process->pid, SIGCONT);
                soak.figures.detail["runs taken over from a paused host"] += takeovers_since(at, i);
                break;
            }
            case 3: {  // a host killed, and the host that takes its runs over killed in the middle of it
                size_t i = busiest();
                std::vector<size_t> at;
                logs(at);
                soak.mark(load, "hosts killed (SIGKILL) and restarted", "host " + std::to_string(i) + " killed");
                hosts[i]->kill();
                size_t taker = hosts.size();
                wait_until(
                    [&] {
                        for (size_t j = 0; j < hosts.size(); ++j)
                            if (j != i && read_from(hosts[j]->log, at[j]).find("resumed run:") != std::string::npos) taker = j;
                        return taker < hosts.size();
                    },
                    std::chrono::seconds(5));
                if (taker < hosts.size()) {
                    hosts[taker]->kill();
                    soak.figures.timeline.emplace_back(load.since_start(),
                                                       "host " + std::to_string(taker) + " killed mid-takeover");
                    ++soak.figures.detail["kills in the middle of a takeover"];
                } else {
                    ++soak.figures.detail["kills with no takeover seen within 5 s"];
                }
                hosts[i]->start();
                if (taker < hosts.size()) hosts[taker]->start();
                break;
            }
            case 4: soak.delete_newest(load, ports, query, (trial / 5) % 2 == 1); break;
        }
    }
    soak.settle_and_verify(load, query,
                           "SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'runs' AND column_name = "
                           "'idempotency_key'",
                           began);
    soak.figures.print(machines ? "PostgreSQL, 3 hosts on 3 host names" : "PostgreSQL, 3 hosts on one host name");
}

TEST_CASE("fault soak: SQLite serve through a full disk, a pause past its lease, kills, deletes", "[peer][faults][soak]") {
    // A private mount namespace needs root (CAP_SYS_ADMIN): CI has it; elsewhere the case says so.
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    constexpr int kLeaseSeconds = 3;
    const int trials = soak_trials(4);
    Soak soak(trials, 20261206, "lease_seconds = " + std::to_string(kLeaseSeconds));
    const std::string data = soak.data;
    // The data dir is a tmpfs in a mount namespace that a holder process keeps (so it outlives a
    // killed serve); each serve enters it. The test reaches the tmpfs with nsenter, and the
    // database through /proc/PID/root.
    test::Process holder({"unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64m tmpfs '" + data + "' && exec sleep 100000"});
    const std::string root = "/proc/" + std::to_string(holder.pid) + "/root";
    REQUIRE(wait_until(
        [&] {
            return test::read_file(std::filesystem::path("/proc") / std::to_string(holder.pid) / "mounts")
                       .find(" " + data + " tmpfs") != std::string::npos;
        },
        std::chrono::seconds(10)));
    const int port = test::free_port();
    const std::string log = (soak.dir.path / "serve.log").string();
    soak.logs.push_back(log);
    std::unique_ptr<test::Process> serve;
    auto start_serve = [&] {
        serve = std::make_unique<test::Process>(
            std::vector<std::string>{"nsenter", "-t", std::to_string(holder.pid), "-m", "sh", "-c",
                                     "exec '" + std::string(test::cli()) + "' --config '" + soak.config +
                                         "' serve --listen 127.0.0.1:" + std::to_string(port) + " >> '" + log + "' 2>&1"});
        INFO(read_from(log, 0));
        REQUIRE(serve->wait_for_port(port));
    };
    start_serve();
    struct Resume {  // never leave serve stopped
        std::unique_ptr<test::Process>& serve;
        ~Resume() {
            if (serve && serve->pid > 0) ::kill(serve->pid, SIGCONT);
        }
    } resume{serve};
    const std::string database = root + data + "/agenthost.db";
    const Query query = [&](const std::string& sql, int columns) { return sqlite_rows(database, sql, columns); };
    auto in_namespace = [&](const std::string& command) {
        return test::run_command("nsenter -t " + std::to_string(holder.pid) + " -m sh -c \"" + command + "\"");
    };

    const auto began = Clock::now();
    Load load({port}, soak.capacity, 4, 11);
    REQUIRE(wait_until([&] { return load.answered() >= 3; }, std::chrono::seconds(30)));
    for (int trial = 0; trial < trials; ++trial) {
        INFO("fault " << trial);
        std::this_thread::sleep_for(milliseconds(soak.between(300, 1500)));  // runs under way at a random moment
        switch (trial % 4) {
            case 0: {  // the data dir's disk full for a moment, then room again
                int hold = soak.between(300, 2000);
                soak.mark(load, "disks full", "disk full " + std::to_string(hold) + " ms");
                auto full = in_namespace("cat /dev/zero > '" + data + "/filler' 2>/dev/null; true");
                REQUIRE(full.exit_code == 0);
                std::this_thread::sleep_for(milliseconds(hold));
                auto freed = in_namespace("rm -f '" + data + "/filler'");
                INFO(freed.err);
                REQUIRE(freed.exit_code == 0);
                break;
            }
            case 1: {  // serve paused (SIGSTOP) past its lease, then let go on
                int hold = kLeaseSeconds * 1000 + soak.between(1000, 2000);
                soak.mark(load, "pauses past the lease", "serve paused " + std::to_string(hold) + " ms");
                ::kill(serve->pid, SIGSTOP);
                std::this_thread::sleep_for(milliseconds(hold));
                ::kill(serve->pid, SIGCONT);
                break;
            }
            case 2: soak.delete_newest(load, {port}, query, (trial / 4) % 2 == 1); break;
            case 3: {  // serve killed (SIGKILL) and started again: it resumes its runs by itself
                soak.mark(load, "serves killed (SIGKILL) and restarted", "serve killed");
                ::kill(serve->pid, SIGKILL);
                ::waitpid(serve->pid, nullptr, 0);
                serve->pid = -1;
                std::this_thread::sleep_for(milliseconds(soak.between(0, 1000)));
                start_serve();
                break;
            }
        }
    }
    soak.settle_and_verify(load, query, "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'idempotency_key'", began);
    CHECK(query("PRAGMA integrity_check", 1)[0][0] == "ok");
    soak.figures.print("SQLite serve");
}
