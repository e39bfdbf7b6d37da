// The plugins' key-value store's contract, checked against both backends: the SQLite file and
// PostgreSQL (on a real server the tests start). Both run the same SQL (store::KeyedValueTable).
#include "sqlite/sqlite_backend.hpp"
#include "support/postgres_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;

namespace {

struct SqliteKv {
    SqliteKv() {
        auto opened = sqlite::open_backend(dir.path / "kv.db", sqlite::Durability::full, 30);
        REQUIRE(opened);
        store = std::move(*opened);
    }
    store::PluginKv& kv() { return store->plugin_kv; }
    test::TempDir dir;
    std::unique_ptr<sqlite::SqliteBackend> store;
};

struct PostgresKv {
    PostgresKv() : store(test::open_postgres_backend()) {}
    store::PluginKv& kv() { return store->plugin_kv; }
    std::unique_ptr<postgres::PgBackend> store;
};

}  // namespace

TEMPLATE_TEST_CASE("plugin kv: values are per plugin, replaced, deleted, and absent reads as none", "[peer][plugin_kv]", SqliteKv,
                   PostgresKv) {
    TestType holder;
    store::PluginKv& kv = holder.kv();
    auto absent = kv.get("torrent", "seen");
    REQUIRE(absent);  // read, and found empty: not an error
    CHECK_FALSE(absent->has_value());
    REQUIRE(kv.set("torrent", "seen", "42", store::Flush::now));
    REQUIRE(kv.set("graph", "seen", "other", store::Flush::with_next));
    REQUIRE(kv.set("scripted", "progress", "7", store::Flush::with_next_write));  // a provider's: read back at once
    CHECK(kv.get("scripted", "progress").value() == std::optional<std::string>("7"));
    CHECK(kv.get("torrent", "seen").value() == std::optional<std::string>("42"));
    REQUIRE(kv.set("torrent", "seen", "43", store::Flush::now));  // replaced
    CHECK(kv.get("torrent", "seen").value() == std::optional<std::string>("43"));
    CHECK(kv.get("graph", "seen").value() == std::optional<std::string>("other"));  // another plugin's key
    const std::string odd = "ünï \"quoted\" '; DROP TABLE plugin_kv; --";
    REQUIRE(kv.set("torrent", odd, odd, store::Flush::now));
    CHECK(kv.get("torrent", odd).value() == std::optional<std::string>(odd));
    REQUIRE(kv.erase("torrent", "seen"));
    CHECK_FALSE(kv.get("torrent", "seen").value().has_value());
    CHECK(kv.erase("torrent", "never set"));  // deleting nothing is not an error
    CHECK(kv.get("graph", "seen").value() == std::optional<std::string>("other"));
}
