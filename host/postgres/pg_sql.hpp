// A PostgreSQL connection as the shared journal statements use it (store::SqlConnection): inside
// the transaction its caller opened, or none for a read.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/sql.hpp"

namespace agenthost::postgres {

// `sql` with each ?N parameter outside quotes written as PostgreSQL's $N.
std::string dollar_parameters(std::string_view sql);

class PgSql final : public store::SqlConnection {
public:
    explicit PgSql(Connection& db) : db_(db) {}
    using store::SqlConnection::execute;
    using store::SqlConnection::query;
    Status query(std::string_view sql, std::span<const store::SqlValue> params,
                 const std::function<void(const store::SqlRow&)>& each) override;
    Result<int64_t> execute(std::string_view sql, std::span<const store::SqlValue> params) override;
    std::string_view row_lock() const override { return " FOR UPDATE"; }

private:
    Result<Rows> run(std::string_view sql, std::span<const store::SqlValue> params);

    Connection& db_;
};

}  // namespace agenthost::postgres
