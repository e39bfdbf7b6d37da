// How much of each model request a prefix cache could serve, over one 50-step turn: for every
// request after the first, the bytes it shares from its start with the request before it, as a
// share of all the bytes sent. The turn is an agent at work: it sets a goal and a plan, then calls
// a tool, marks a task done or notes its progress step after step, and remembers a fact, so the
// agent's state changes as it would in a real run. Requests are read in the order a vendor lays out
// its prompt (the tool schemas, then the messages: Anthropic's order, and the order prefix caches
// see), from the scripted provider's request log. Goal (#46): at least 90 %.
//   agenthost_prompt_cache [--steps N] [--dir SCRATCH_DIR]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

json call(const std::string& name, json arguments) {
    return {{"tool_calls", json::array({{{"name", name}, {"arguments", std::move(arguments)}}})}};
}

// The model's replies: a goal and a five-task plan, then work — a tool call, a task marked done
// every eighth step, a progress note every fifth, a fact once — and an answer at the end.
json cassette(int steps) {
    json replies = json::array();
    replies.push_back(call("set_goal", {{"goal", "Tidy the notes folder and report what changed"}}));
    replies.push_back(call("create_plan", {{"steps",
                                            {"List the notes", "Group them by topic", "Merge duplicates",
                                             "Rename the merged notes", "Write the report"}}}));
    int task = 1;
    for (int i = 2; i < steps - 1; ++i) {
        if (i % 8 == 0 && task <= 5)
            replies.push_back(call("update_task", {{"id", task++}, {"status", "done"}}));
        else if (i % 5 == 0)
            replies.push_back(call("note_progress", {{"note", "checked " + std::to_string(i * 3) + " notes so far"}}));
        else if (i == 21)
            replies.push_back(call("remember_fact", {{"fact", "the notes folder keeps drafts under drafts/"}}));
        else
            replies.push_back(call("echo", {{"text", "note " + std::to_string(i) + ": contents of the note, a few lines long"}}));
    }
    replies.push_back({{"text", "Done: the notes are grouped, merged and renamed."}});
    return {{"replies", replies}};
}

std::vector<std::string> laid_out_requests(const fs::path& log) {
    std::ifstream in(log);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        json request = json::parse(line, nullptr, false);
        if (!request.is_object() || !request.contains("messages")) continue;
        std::string laid_out = request.value("tools", json::array()).dump();
        for (const auto& m : request["messages"]) laid_out += m.dump();
        out.push_back(std::move(laid_out));
    }
    return out;
}

size_t common_prefix(const std::string& a, const std::string& b) {
    auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return static_cast<size_t>(ia - a.begin());
}

struct Share {
    size_t requests = 0, sent = 0, cacheable = 0, broken = 0;
    double percent() const { return sent ? 100.0 * static_cast<double>(cacheable) / static_cast<double>(sent) : 0; }
};

// One turn of `steps` steps with these plugins enabled; what a prefix cache could serve of it.
Share measure(const fs::path& dir, int steps, const std::string& plugins) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    write(dir / "cassette.json", cassette(steps).dump());
    write(dir / "agenthost.toml",
          "data_dir = \"" + (dir / "data").string() + "\"\ndefault_plugin_dirs = false\nplugin_dirs = [\"" +
              AGENTHOST_BUILD_PLUGIN_DIR + "\", \"" + AGENTHOST_EXAMPLE_PLUGIN_DIR + "\"]\nenabled_plugins = [" + plugins +
              "]\n\n[provider]\nuse = \"scripted\"\n\n[plugins.scripted]\ncassette = \"" + (dir / "cassette.json").string() +
              "\"\nrequest_log = \"" + (dir / "requests.jsonl").string() + "\"\n");
    std::string command = std::string("'") + AGENTHOST_CLI + "' --config '" + (dir / "agenthost.toml").string() +
                          "' run --mode execute 'tidy my notes' >'" + (dir / "out.txt").string() + "' 2>&1";
    if (std::system(command.c_str()) != 0)
        std::fprintf(stderr, "prompt cache: the turn failed (see %s)\n", (dir / "out.txt").c_str());
    std::vector<std::string> requests = laid_out_requests(dir / "requests.jsonl");
    Share share;
    share.requests = requests.size();
    for (size_t i = 0; i < requests.size(); ++i) {
        share.sent += requests[i].size();
        if (i == 0) continue;
        size_t shared = common_prefix(requests[i], requests[i - 1]);
        share.cacheable += shared;
        if (shared < requests[i - 1].size()) ++share.broken;  // the request before is not a prefix of this one
    }
    return share;
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 50;
    fs::path dir = fs::temp_directory_path() / ("agenthost-prompt-cache-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--steps") steps = std::max(4, std::atoi(argv[i + 1]));
        if (std::string(argv[i]) == "--dir") dir = argv[i + 1];
    }
    struct Setup {
        const char* what;
        const char* plugins;
    };
    const Setup setups[] = {
        {"the scripted provider and the C example plugin", R"("scripted", "example_c")"},
        {"with the bundled folders, graph and fetch tools too", R"("scripted", "example_c", "folders", "graph", "fetch")"},
    };
    bool ran = true;
    for (const Setup& setup : setups) {
        Share share = measure(dir, steps, setup.plugins);
        std::printf(
            "prompt cache, one %zu-request turn (%s): %.1f %% of the %zu bytes sent could come from a prefix cache "
            "(goal >= 90 %%); %zu requests did not start with the whole request before them\n",
            share.requests, setup.what, share.percent(), share.sent, share.broken);
        ran = ran && share.requests >= 2;
    }
    fs::remove_all(dir);
    return ran ? 0 : 1;
}
