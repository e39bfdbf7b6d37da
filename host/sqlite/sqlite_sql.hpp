// A SQLite connection as the shared journal statements use it (store::SqlConnection): inside the
// write transaction or the read its caller opened on the Database.
#pragma once

#include "sqlite/database.hpp"
#include "store/sql.hpp"

namespace agenthost::sqlite {

class SqliteSql final : public store::SqlConnection {
public:
    explicit SqliteSql(Database& db) : db_(db) {}
    using store::SqlConnection::execute;
    using store::SqlConnection::query;
    Status query(std::string_view sql, std::span<const store::SqlValue> params,
                 const std::function<void(const store::SqlRow&)>& each) override;
    Result<int64_t> execute(std::string_view sql, std::span<const store::SqlValue> params) override;
    std::string_view row_lock() const override { return ""; }

private:
    Database& db_;
};

}  // namespace agenthost::sqlite
