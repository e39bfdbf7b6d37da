#include "sqlite/sqlite_sql.hpp"

#include "common/overloaded.hpp"

namespace agenthost::sqlite {

namespace {

// Text is bound without a copy: the caller's values outlive the statement's run.
void bind_all(Statement& stmt, std::span<const store::SqlValue> params) {
    int index = 1;
    for (const store::SqlValue& value : params) {
        std::visit(
            Overloaded{[&](std::monostate) { stmt.bind_null(index); }, [&](int64_t v) { stmt.bind(index, v); },
                       [&](double v) { stmt.bind_real(index, v); }, [&](std::string_view v) { stmt.bind_borrowed(index, v); }},
            value);
        ++index;
    }
}

class StatementRow final : public store::SqlRow {
public:
    explicit StatementRow(const Statement& stmt) : stmt_(stmt) {}
    std::string text(int column) const override { return stmt_.text(column); }
    int64_t integer(int column) const override { return stmt_.integer(column); }
    double real(int column) const override { return stmt_.real(column); }

private:
    const Statement& stmt_;
};

}  // namespace

Status SqliteSql::query(std::string_view sql, std::span<const store::SqlValue> params,
                        const std::function<void(const store::SqlRow&)>& each) {
    auto stmt = db_.prepare(std::string(sql));
    if (!stmt) return stmt.error();
    bind_all(*stmt, params);
    const StatementRow row(*stmt);
    while (stmt->step()) each(row);
    return stmt->status();
}

Result<int64_t> SqliteSql::execute(std::string_view sql, std::span<const store::SqlValue> params) {
    auto stmt = db_.prepare(std::string(sql));
    if (!stmt) return stmt.error();
    bind_all(*stmt, params);
    if (Status s = stmt->run(); !s) return s.error();
    return db_.changes();
}

}  // namespace agenthost::sqlite
