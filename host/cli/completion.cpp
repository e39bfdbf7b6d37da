// completion: scripts for bash, zsh and fish, and the man page, generated from the command table.
#include "cli/command_handlers.hpp"

#include <iostream>

namespace agenthost::cli {

using nlohmann::json;

namespace {

// Completion scripts (and the man page) generated from the table, so a new command or option is
// completed and documented at once. `completion man` is used by the build (packaging/).
std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

std::string option_names(const CommandSpec& c) {
    std::string out;
    for (auto o : c.options) out += (out.empty() ? "" : " ") + std::string(o.substr(0, o.find(' ')));
    return out;
}

// Text safe inside single quotes (and roff).
std::string plain(std::string text) {
    for (char& ch : text)
        if (ch == '\'' || ch == '\\') ch = ' ';
    return text;
}

void print_bash() {
    std::string names, cases;
    for (const auto& c : commands()) {
        names += (names.empty() ? "" : " ") + std::string(c.name);
        cases += "    " + std::string(c.name) + ") opts=\"" + option_names(c) + "\" ;;\n";
    }
    // Values: files for --config/--tools, the fixed words of --log-level/--mode, tool names and
    // conversation ids asked of agenthost itself (with the --config given so far).
    std::cout
        << "# bash completion for agenthost (agenthost completion bash)\n"
           "_agenthost_names() {\n"
           "  agenthost $2 $1 --json 2>/dev/null | sed -n \"s/^    \\\"$3\\\": \\\"\\(.*\\)\\\",\\{0,1\\}$/\\1/p\"\n"
           "}\n"
           "_agenthost() {\n"
           "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmd=\"\" opts=\"\" config=\"\" i\n"
           "  case \"$prev\" in\n"
           "    --config|--tools) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
           "    --log-level) COMPREPLY=($(compgen -W \"trace debug info warn error off\" -- \"$cur\")); return ;;\n"
           "    --mode) COMPREPLY=($(compgen -W \"explore plan execute\" -- \"$cur\")); return ;;\n"
           "  esac\n"
           "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "    case \"${COMP_WORDS[i]}\" in\n"
           "      --config) config=\"--config ${COMP_WORDS[i+1]}\"; ((i++)) ;;\n"
           "      --log-level) ((i++)) ;;\n"
           "      -*) ;;\n"
           "      *) [ -z \"$cmd\" ] && cmd=\"${COMP_WORDS[i]}\" ;;\n"
           "    esac\n"
           "  done\n"
           "  if [ -z \"$cmd\" ]; then\n"
           "    COMPREPLY=($(compgen -W \""
        << names
        << " --config --log-level --help --version\" -- \"$cur\")); return\n"
           "  fi\n"
           "  if [ \"$prev\" = \"$cmd\" ]; then\n"
           "    case \"$cmd\" in\n"
           "      tool) COMPREPLY=($(compgen -W \"$(_agenthost_names tools \"$config\" name)\" -- \"$cur\")); return ;;\n"
           "      show) COMPREPLY=($(compgen -W \"$(_agenthost_names conversations \"$config\" id)\" -- \"$cur\")); return ;;\n"
           "      completion) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")); return ;;\n"
           "    esac\n"
           "  fi\n"
           "  case \"$prev\" in --conversation)\n"
           "    COMPREPLY=($(compgen -W \"$(_agenthost_names conversations \"$config\" id)\" -- \"$cur\")); return ;;\n"
           "  esac\n"
           "  case \"$cmd\" in\n"
        << cases
        << "  esac\n"
           "  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "}\n"
           "complete -o default -F _agenthost agenthost\n";
}

void print_zsh() {
    std::cout << "#compdef agenthost\n# zsh completion for agenthost (agenthost completion zsh)\n"
                 "local cmd i\n"
                 "for (( i = 2; i < CURRENT; i++ )); do\n"
                 "  case $words[i] in --config|--log-level) (( i++ )) ;; -*) ;; *) cmd=$words[i]; break ;; esac\n"
                 "done\n"
                 "if [[ -z $cmd ]]; then\n"
                 "  local -a commands\n"
                 "  commands=(\n";
    for (const auto& c : commands()) std::cout << "    '" << c.name << ":" << plain(first_line(c.help)) << "'\n";
    std::cout << "  )\n"
                 "  _describe -t commands 'agenthost command' commands\n"
                 "  compadd -- --config --log-level --help --version\n"
                 "  return\n"
                 "fi\n"
                 "case $cmd in\n";
    for (const auto& c : commands()) std::cout << "  " << c.name << ") compadd -- " << option_names(c) << " ;;\n";
    std::cout << "esac\n_files\n";
}

void print_fish() {
    std::cout << "# fish completion for agenthost (agenthost completion fish)\n"
                 "complete -c agenthost -f\n"
                 "complete -c agenthost -l config -r -d 'config file'\n"
                 "complete -c agenthost -l log-level -x -a 'trace debug info warn error off'\n";
    for (const auto& c : commands()) {
        std::cout << "complete -c agenthost -n '__fish_use_subcommand' -a " << c.name << " -d '"
                  << plain(first_line(c.help)).substr(0, 60) << "'\n";
        for (auto o : c.options)
            std::cout << "complete -c agenthost -n '__fish_seen_subcommand_from " << c.name << "' -l "
                      << o.substr(2, o.find(' ') - 2) << (o.find(' ') != std::string_view::npos ? " -r" : "") << "\n";
    }
}

// The man page (roff), from the same table as --help.
void print_man() {
    auto roff = [](const std::string& text) {
        std::string out;
        for (char ch : text) {
            if (ch == '-')
                out += "\\-";
            else if (ch == '\\')
                out += "\\e";
            else
                out += ch;
        }
        return out;
    };
    std::cout << ".TH AGENTHOST 1 \"\" \"agenthost " AGENTHOST_VERSION
                 "\" \"User Commands\"\n"
                 ".SH NAME\nagenthost \\- a native host for LLM agents with plugin tools and providers\n"
                 ".SH SYNOPSIS\n.B agenthost\n[\\fB\\-\\-config\\fR \\fIFILE\\fR] [\\fB\\-\\-log\\-level\\fR \\fILEVEL\\fR] "
                 "\\fICOMMAND\\fR [\\fIARGS\\fR]\n"
                 ".SH DESCRIPTION\nagenthost runs an agent loop (explore, plan, execute) over tools and language-model "
                 "providers that are plugins loaded through one C ABI, keeps every run in SQLite with per-step checkpoints, "
                 "and serves a web panel, an OpenAI-compatible API and an MCP server.\n"
                 ".SH COMMANDS\n";
    for (const auto& c : commands()) {
        std::string help(c.help);
        for (char& ch : help)
            if (ch == '\n') ch = ' ';
        std::cout << ".TP\n.B " << roff(std::string(c.synopsis)) << "\n" << roff(help) << "\n";
    }
    std::cout << ".SH FILES\n.TP\n.I /etc/agenthost/agenthost.toml\nThe system configuration (the service's). Also searched: "
                 "\\fB\\-\\-config\\fR, \\fB$AGENTHOST_CONFIG\\fR, \\fI./agenthost.toml\\fR, "
                 "\\fI$XDG_CONFIG_HOME/agenthost/agenthost.toml\\fR.\n"
                 ".TP\n.I /var/lib/agenthost\nThe service's data: the database, plugin data, the generated server token.\n"
                 ".TP\n.I ~/.local/share/agenthost\nA user's data ($XDG_DATA_HOME/agenthost).\n"
                 ".SH ENVIRONMENT\n.TP\n.B AGENTHOST_CONFIG\nThe config file to use.\n.TP\n.B AGENTHOST_TOKEN\n"
                 "The bearer token of \\fBserve\\fR.\n.TP\n.B NO_COLOR\nTurns colours off.\n"
                 ".SH EXIT STATUS\n0 done; 1 the turn failed or hit a limit (doctor: not ready); 2 a usage or configuration "
                 "error; 3 paused waiting for approval; 130 cancelled by Ctrl\\-C or SIGTERM.\n"
                 ".SH SEE ALSO\nThe documentation in /usr/share/doc/agenthost and the project's docs/ folder.\n";
}

}  // namespace

int cmd_completion(Context& ctx) {
    static const std::map<std::string, void (*)()> printers{
        {"bash", print_bash}, {"zsh", print_zsh}, {"fish", print_fish}, {"man", print_man}};
    const auto& args = ctx.invocation.args;
    auto it = args.size() == 1 ? printers.find(args[0]) : printers.end();
    if (it == printers.end()) return usage_error("completion takes one shell: bash, zsh or fish");
    it->second();
    return kExitOk;
}

}  // namespace agenthost::cli
