// What a "hello" costs the model with the config `agenthost init` writes: the bytes of the first
// request's system prompt and tool schemas, and the tokens they make at 4 bytes a token (the usual
// estimate for English and JSON; a model's own tokenizer differs by about a fifth either way).
// Printed beside the same request with every tool offered (on_demand_tools = 0, a qBittorrent
// configured): what a hello cost before tools were offered by what is configured and families on
// demand. The limit (#47): 1,500 tokens. The provider is the scripted one, so nothing is fetched.
//   agenthost_prompt_size [--dir SCRATCH_DIR]
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// init's config with its [provider] table replaced by the scripted provider logging its requests.
std::string with_scripted(std::string config, const fs::path& dir) {
    size_t at = config.find("[provider]\n");
    size_t end = config.find("\n[", at + 1);
    config.replace(at, end == std::string::npos ? std::string::npos : end + 1 - at,
                   "[provider]\nuse = \"scripted\"\n\n[plugins.scripted]\ncassette = \"" + (dir / "cassette.json").string() +
                       "\"\nrequest_log = \"" + (dir / "requests.jsonl").string() + "\"\n");
    return config;
}

struct Request {
    size_t bytes = 0;
    size_t tools = 0;
};

// One `run hello` with `config`; the first model request's system prompt and tools.
Request hello(const fs::path& dir, const std::string& config) {
    write(dir / "agenthost.toml", config);
    fs::remove(dir / "requests.jsonl");
    std::string command =
        std::string("'") + AGENTHOST_CLI + "' --config '" + (dir / "agenthost.toml").string() + "' run hello >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) std::fprintf(stderr, "prompt size: the turn failed (%s)\n", command.c_str());
    std::istringstream lines(read(dir / "requests.jsonl"));
    std::string first;
    std::getline(lines, first);
    json request = json::parse(first, nullptr, false);
    if (!request.is_object()) return {};
    return {request["messages"].dump().size() + request["tools"].dump().size(), request["tools"].size()};
}

}  // namespace

int main(int argc, char** argv) {
    fs::path dir = fs::temp_directory_path() / ("agenthost-prompt-size-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--dir") dir = argv[i + 1];
    fs::remove_all(dir);
    fs::create_directories(dir);
    write(dir / "cassette.json", R"({"fallback": {"text": "Hello!"}})");
    // The config a new user gets (init checks the server and fails here: the file is written first).
    std::string init = std::string("'") + AGENTHOST_CLI + "' --config '" + (dir / "init.toml").string() +
                       "' init --preset ollama --model qwen3:8b --data-dir '" + (dir / "data").string() + "' >/dev/null 2>&1";
    if (std::system(init.c_str()) < 0 || !fs::exists(dir / "init.toml")) return std::fprintf(stderr, "init wrote no config\n"), 2;
    const std::string config = with_scripted(read(dir / "init.toml"), dir);
    std::string everything = config;
    everything.replace(everything.find("[agent]\n"), 8, "[agent]\non_demand_tools = 0\n");
    everything += "\n[plugins.torrent]\nqbittorrent_url = \"http://127.0.0.1:9\"\n";

    Request now = hello(dir, config), before = hello(dir, everything);
    auto tokens = [](size_t bytes) { return static_cast<double>(bytes) / 4; };
    std::printf(
        "a \"hello\" with init's config: %zu tools offered, %zu bytes of system prompt and schemas, about %.0f tokens "
        "(limit 1500)\n",
        now.tools, now.bytes, tokens(now.bytes));
    std::printf("  with every family offered (on_demand_tools = 0) and a qBittorrent: %zu tools, %zu bytes, about %.0f tokens\n",
                before.tools, before.bytes, tokens(before.bytes));
    fs::remove_all(dir);
    return now.bytes > 0 && before.bytes > 0 ? 0 : 1;
}
