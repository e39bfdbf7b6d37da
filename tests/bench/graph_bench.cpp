// Benchmark: apply_graph_spec with 1,000 nodes and 3,000 edges into a graph that already holds
// 10,000 concepts. Prints the executor (dedup + layout), auditor, committer and vault write times.
//   agenthost_graph_bench [--existing N] [--nodes N] [--edges N]
#include "graph_db.hpp"
#include "render.hpp"
#include "spec.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using graph::json;

namespace {
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string word(std::mt19937& random) {
    static const char* syllables[] = {"ka", "lo", "mi", "ra", "te", "su", "no", "vi",
                                      "de", "po", "ly", "an", "or", "el", "qu", "zi"};
    std::string w;
    for (int i = 0; i < 3; ++i) w += syllables[random() % 16];
    w[0] = static_cast<char>(std::toupper(w[0]));
    return w;
}
}  // namespace

int main(int argc, char** argv) {
    size_t existing = 10000, nodes = 1000, edges = 3000;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--existing")
            existing = std::stoul(argv[i + 1]);
        else if (flag == "--nodes")
            nodes = std::stoul(argv[i + 1]);
        else if (flag == "--edges")
            edges = std::stoul(argv[i + 1]);
    }
    fs::path dir = fs::temp_directory_path() / ("agenthost-graph-bench-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string error;
    auto db = graph::GraphDb::open((dir / "graph.db").string(), error);
    if (!db) return 2;
    std::mt19937 random(7);
    graph::SpecSettings settings;

    db->begin();
    int64_t g = db->insert("graphs", {{"name", "Big"}, {"description", ""}});
    db->commit();
    json seed{{"nodes", json::array()}, {"edges", json::array()}};
    for (size_t i = 0; i < existing; ++i)
        seed["nodes"].push_back({{"name", word(random) + " " + word(random) + " " + std::to_string(i)}});
    auto seeded = Clock::now();
    auto base = graph::execute(*db, seed, g, settings, error);
    graph::commit(*db, base);
    double seed_ms = ms_since(seeded);

    json spec{{"nodes", json::array()}, {"edges", json::array()}};
    for (size_t i = 0; i < nodes; ++i)
        spec["nodes"].push_back(
            {{"name", word(random) + " " + word(random) + " new " + std::to_string(i)}, {"type", i % 2 ? "Person" : "Place"}});
    for (size_t i = 0; i < edges; ++i) {
        const json& a = spec["nodes"][random() % nodes];
        const json& b = spec["nodes"][random() % nodes];
        if (a == b) continue;
        spec["edges"].push_back({{"source", a["name"]}, {"target", b["name"]}, {"type", "link " + std::to_string(i % 7)}});
    }
    auto t0 = Clock::now();
    auto plan = graph::execute(*db, spec, g, settings, error);
    double execute_ms = ms_since(t0);
    auto t1 = Clock::now();
    auto violations = graph::audit(plan, settings);
    double audit_ms = ms_since(t1);
    auto t2 = Clock::now();
    graph::commit(*db, plan);
    double commit_ms = ms_since(t2);
    graph::Vault vault(dir / "vault");
    auto t3 = Clock::now();
    vault.write_all(*db);
    double vault_ms = ms_since(t3);

    std::printf("graph benchmark: %zu nodes / %zu edges into a graph of %zu concepts (%zu audit findings)\n", nodes,
                spec["edges"].size(), existing, violations.size());
    std::printf("  seeding %zu concepts        %9.1f ms\n", existing, seed_ms);
    std::printf("  executor (dedup + layout)  %9.1f ms\n", execute_ms);
    std::printf("  auditor                    %9.1f ms\n", audit_ms);
    std::printf("  committer (one change)     %9.1f ms\n", commit_ms);
    std::printf("  vault write (all %zu notes) %9.1f ms\n", existing + nodes, vault_ms);
    fs::remove_all(dir);
    return 0;
}
