#include "cli/chat.hpp"

#include "cli/turn_session.hpp"
#include "common/base64.hpp"
#include "common/bounded_json.hpp"
#include "common/spelling.hpp"
#include "tools/catalogue.hpp"

#include <editline/readline.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

namespace agenthost::cli {

namespace {

using nlohmann::json;

const char* const kChatHelp =
    "  /help                        this list\n"
    "  /mode [explore|plan|execute] the mode of the next turns (alone: the current one)\n"
    "  /provider [NAME]             a [providers.NAME] of the config, or 'default' (alone: the current one)\n"
    "  /model [MODEL]               the model of the next turns, or 'default' (alone: the current one)\n"
    "  /history [N]                 the last N exchanges of this conversation (default 5)\n"
    "  /retry                       send your last message again\n"
    "  /copy                        put the last answer on the clipboard (terminals that allow OSC 52)\n"
    "  /new                         start a new conversation\n"
    "  /approve                     run the call a paused run waits on, and continue\n"
    "  /reject [REASON]             refuse it (the reason goes to the model), and continue\n"
    "  /tools                       the tools the model is offered\n"
    "  /conversation                this conversation's id (agenthost show ID prints it)\n"
    "  /quit                        leave (also Ctrl-D)\n";

// Reads one line: through libedit on a terminal (editing, history), plainly from a pipe.
class LineReader {
public:
    LineReader(bool terminal, std::filesystem::path history) : terminal_(terminal), history_(std::move(history)) {
        if (!terminal_) return;
        tcgetattr(STDIN_FILENO, &saved_);
        using_history();
        read_history(history_.c_str());
    }

    std::optional<std::string> next(const std::string& prompt) {
        if (!terminal_) {
            std::string line;
            if (!std::getline(std::cin, line)) return std::nullopt;
            return line;
        }
        char* raw = readline(prompt.c_str());
        if (!raw) return std::nullopt;
        std::string line(raw);
        std::free(raw);
        if (!line.empty()) {
            add_history(line.c_str());
            write_history(history_.c_str());  // each line at once: the session may end by Ctrl-C
            ::chmod(history_.c_str(), 0600);  // prompts may hold private things
        }
        return line;
    }

    // Puts the terminal back as it was before editing began (Ctrl-C at the prompt leaves at once).
    void restore_terminal() const {
        if (terminal_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }

private:
    bool terminal_;
    std::filesystem::path history_;
    termios saved_{};
};

struct Session {
    Context& ctx;
    TurnSettings settings;
    std::string conversation;
    bool terminal;
    int status = kExitOk;
    std::string last_prompt;  // for /retry
};

std::string provider_names(const config::Config& config) {
    std::string names = "default (" + config.provider.name + ")";
    for (const auto& [n, p] : config.providers) names += ", " + n;
    return names;
}

// "execute > ", "plan@cloud > ": the mode and a provider other than the default, as each turn uses them.
std::string prompt_text(const Session& s) {
    return std::string(agent::mode_name(s.settings.mode)) + (s.settings.provider.empty() ? "" : "@" + s.settings.provider) +
           (s.settings.model.empty() ? "" : "/" + s.settings.model) + " > ";
}

// The prompts and answers of the conversation's last `turns` turns, oldest first.
Result<std::vector<store::StoredMessage>> last_exchanges(Session& s, int turns) {
    auto newest = s.ctx.app->runs().runs(s.conversation, 1);
    if (!newest) return newest.error();
    if (newest->empty()) return std::vector<store::StoredMessage>{};
    return s.ctx.app->runs().exchanges(s.conversation, newest->front().turn + 1, turns);
}

// What a stored prompt or answer says, and who said it ("user" or "assistant"); nothing else.
struct Said {
    std::string role, text;
};
std::optional<Said> said(const store::StoredMessage& m) {
    json body = json::parse(m.body, nullptr, false);
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string()) return std::nullopt;
    Said out{json_io::get_string(body, "role"), body["content"].get<std::string>()};
    if (out.text.empty() || (out.role != "user" && out.role != "assistant")) return std::nullopt;
    return out;
}

// The conversation's last `turns` exchanges: each prompt and the answer it got.
void print_history(Session& s, int turns) {
    auto read = last_exchanges(s, turns);
    if (!read) return void(std::cerr << "(the history cannot be read now: " << read.error().message << ")\n");
    const std::vector<store::StoredMessage>& messages = *read;
    if (messages.empty()) return void(std::cerr << "(no exchanges yet in " << s.conversation << ")\n");
    // A prompt whose turn gave no answer (failed, cancelled, paused) is marked with how its run ended.
    auto unanswered = [&](int64_t run) {
        auto read = s.ctx.app->runs().run(run);  // unreadable: the mark goes without how the run ended
        const std::optional<store::RunRecord> record = read ? std::move(*read) : std::nullopt;
        std::string how = !record               ? ""
                          : record->stop_reason ? std::string(stop_reason_name(*record->stop_reason))
                                                : std::string(run_status_name(record->status));
        std::cerr << "  (no answer" << (how.empty() ? "" : ": run " + std::to_string(run) + " " + how) << ")\n";
    };
    int64_t waiting = 0;  // the run of a prompt not yet answered; 0: none (run ids start at 1)
    for (const auto& m : messages) {
        auto line = said(m);
        if (!line) continue;
        if (line->role == "user") {
            if (waiting != 0) unanswered(waiting);
            waiting = m.run;
        } else {
            waiting = 0;
        }
        std::cerr << (line->role == "user" ? "you: " : "agent: ") << line->text << "\n";
    }
    if (waiting != 0) unanswered(waiting);
}

// The last answer of the conversation (turns that gave none are passed over), "" when it has none.
Result<std::string> last_answer(Session& s) {
    auto messages = last_exchanges(s, 20);
    if (!messages) return messages.error();
    for (auto it = messages->rbegin(); it != messages->rend(); ++it)
        if (auto line = said(*it); line && line->role == "assistant") return line->text;
    return std::string();
}

// OSC 52: the terminal itself puts the text on the clipboard (no clipboard tool needed).
void copy_to_clipboard(const std::string& text) { std::cerr << "\033]52;c;" << to_base64(text) << "\a" << std::flush; }

using SlashCommand = std::function<void(Session&, const std::string& argument)>;

void decide(Session& s, bool approve, const std::string& reason) {
    HostApp& app = *s.ctx.app;
    if (auto waiting = app.runner().pending_approval(s.conversation); waiting && !*waiting) {
        std::cerr << "nothing is waiting for approval in this conversation\n";
        return;
    }
    using Kind = agent::ApprovalDecision::Kind;
    TurnPrinter printer(s.settings.yes, s.settings.output);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(s.ctx.signals, cancel);
    auto outcome =
        app.runner().resume(s.conversation, {approve ? Kind::approve : Kind::reject, reason}, controls(printer, cancel));
    s.status = report(app, printer, outcome, s.conversation, false);
}

const std::map<std::string, SlashCommand>& slash_commands() {
    static const std::map<std::string, SlashCommand> table{
        {"/help", [](Session&, const std::string&) { std::cerr << kChatHelp; }},
        {"/mode",
         [](Session& s, const std::string& a) {
             if (a.empty())
                 return void(std::cerr << "mode: " << agent::mode_name(s.settings.mode) << " (explore, plan or execute)\n");
             auto m = agent::parse_mode(a);
             if (!m) return void(std::cerr << "/mode takes explore, plan or execute\n");
             s.settings.mode = *m;
             std::cerr << "mode: " << a << "\n";
         }},
        {"/provider",
         [](Session& s, const std::string& a) {
             std::string name = a == "default" ? "" : a;
             if (a.empty())
                 return void(std::cerr << "provider: " << (s.settings.provider.empty() ? "default" : s.settings.provider)
                                       << " (choices: " << provider_names(*s.ctx.config) << ")\n");
             if (!name.empty() && !s.ctx.config->provider_named(name))
                 return void(std::cerr << "no provider '" << a << "' (choices: " << provider_names(*s.ctx.config) << ")\n");
             s.settings.provider = name;
             std::cerr << "provider: " << (name.empty() ? "default" : name) << "\n";
         }},
        {"/model",
         [](Session& s, const std::string& a) {
             const auto* p = s.ctx.config->provider_named(s.settings.provider);
             std::string configured = p && !p->model.empty() ? p->model : "the provider's default";
             // What the provider's server serves: the choices shown, and a name it does not serve refused.
             auto served = s.ctx.app->queue().check(p ? p->name : s.settings.provider);
             std::string choices = served.models.empty() ? "" : "; it serves: " + spelling::join_names(served.models);
             if (a.empty())
                 return void(std::cerr << "model: " << (s.settings.model.empty() ? configured : s.settings.model)
                                       << " (/model NAME changes it; 'default': " << configured << choices << ")\n");
             if (a != "default" && !served.models.empty() && !served.serves(a))
                 return void(std::cerr << "the provider does not serve '" << a << "'" << choices << "; the model stays "
                                       << (s.settings.model.empty() ? configured : s.settings.model) << "\n");
             s.settings.model = a == "default" ? "" : a;
             std::cerr << "model: " << a << (served.models.empty() ? " (not checked: " + served.message + ")" : "") << "\n";
         }},
        {"/history",
         [](Session& s, const std::string& a) { print_history(s, a.empty() ? 5 : std::max(1, std::atoi(a.c_str()))); }},
        {"/copy",
         [](Session& s, const std::string&) {
             auto read = last_answer(s);
             if (!read) return void(std::cerr << "the last answer cannot be read now: " << read.error().message << "\n");
             const std::string& answer = *read;
             if (answer.empty()) return void(std::cerr << "no answer to copy yet\n");
             copy_to_clipboard(answer);
             std::cerr << "copied the last answer (" << answer.size() << " bytes)\n";
         }},
        {"/new",
         [](Session& s, const std::string&) {
             s.conversation = new_conversation_id();
             std::cerr << "new conversation: " << s.conversation << "\n";
         }},
        {"/approve", [](Session& s, const std::string&) { decide(s, true, ""); }},
        {"/reject", [](Session& s, const std::string& a) { decide(s, false, a); }},
        {"/tools",
         [](Session& s, const std::string&) {
             for (const auto& t : s.ctx.app->catalogue().all(tools::Scope::agent)) {
                 std::string line = t.description.substr(0, t.description.find('\n'));
                 if (line.size() > 80) {
                     size_t cut = line.rfind(' ', 80);
                     line = line.substr(0, cut == std::string::npos ? 80 : cut) + "…";
                 }
                 std::cerr << "  " << t.name << (t.needs_approval ? " (asks first)" : "") << ": " << line << "\n";
             }
         }},
        {"/conversation", [](Session& s, const std::string&) { std::cerr << s.conversation << "\n"; }},
    };
    return table;
}

}  // namespace

int run_chat(Context& ctx) {
    if (!ctx.invocation.args.empty()) return usage_error("chat takes no prompt: type it at the prompt (or use run)");
    auto settings = turn_settings(ctx);
    if (!settings) return usage_error(settings.error().message);
    const bool terminal = isatty(STDIN_FILENO) != 0;
    settings->summary = false;
    Session session{ctx,      *settings, settings->conversation.empty() ? new_conversation_id() : settings->conversation,
                    terminal, kExitOk,   ""};
    LineReader reader(terminal, ctx.config->data_dir / "chat_history");
    if (terminal) {
        std::cerr << "agenthost chat — conversation " << session.conversation
                  << ". /help lists commands; Ctrl-C cancels a turn, "
                     "Ctrl-D leaves.\n";
        if (!settings->conversation.empty()) print_history(session, 3);  // a conversation taken up again: where it stood
    }

    for (;;) {
        std::optional<std::string> line;
        {
            // At the prompt, Ctrl-C leaves (the terminal put back first); during a turn it cancels the turn.
            auto on_signal = ctx.signals.on_first([&reader] {
                reader.restore_terminal();
                std::cerr << "\n" << std::flush;
                _exit(kExitOk);
            });
            line = reader.next(terminal ? prompt_text(session) : "> ");
        }
        if (!line) break;
        std::string text = *line;
        while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
        if (text.empty()) continue;
        if (text[0] == '/') {
            std::string name = text.substr(0, text.find(' '));
            std::string argument = name.size() < text.size() ? text.substr(name.size() + 1) : "";
            if (name == "/quit" || name == "/exit") break;
            if (name == "/retry") {
                if (session.last_prompt.empty()) {
                    std::cerr << "nothing to send again yet\n";
                    continue;
                }
                text = session.last_prompt;
                std::cerr << "again: " << text << "\n";
            } else {
                auto it = slash_commands().find(name);
                if (it == slash_commands().end())
                    std::cerr << "unknown command " << name << " (/help lists them)\n";
                else
                    it->second(session, argument);
                continue;
            }
        }
        session.last_prompt = text;
        session.status = run_turn(ctx.signals, *ctx.app, session.settings, text, session.conversation);
        if (terminal) std::cerr << "\n";
    }
    std::cerr << "conversation: " << session.conversation << " (agenthost show " << session.conversation << ")\n";
    return session.status == kExitInterrupted && terminal ? kExitOk : session.status;
}

}  // namespace agenthost::cli
