#include "postgres/pg_sql.hpp"

#include "common/overloaded.hpp"
#include "store/store_error.hpp"

#include <cctype>

namespace agenthost::postgres {

namespace {

class ResultRow final : public store::SqlRow {
public:
    ResultRow(const Rows& rows, int index) : rows_(rows), index_(index) {}
    std::string text(int column) const override { return rows_.text(index_, column); }
    int64_t integer(int column) const override { return rows_.integer(index_, column); }
    double real(int column) const override { return rows_.real(index_, column); }

private:
    const Rows& rows_;
    int index_;
};

}  // namespace

std::string dollar_parameters(std::string_view sql) {
    std::string out(sql);
    bool quoted = false;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == '\'') quoted = !quoted;  // '' inside a literal toggles twice
        if (!quoted && out[i] == '?' && i + 1 < out.size() && std::isdigit(static_cast<unsigned char>(out[i + 1]))) out[i] = '$';
    }
    return out;
}

Result<Rows> PgSql::run(std::string_view sql, std::span<const store::SqlValue> params) {
    std::vector<Param> values;
    values.reserve(params.size());
    for (const store::SqlValue& value : params)
        values.push_back(std::visit(Overloaded{[](std::monostate) { return Param(); }, [](int64_t v) { return param(v); },
                                               [](double v) { return param(v); }, [](std::string_view v) { return param(v); }},
                                    value));
    auto rows = db_.exec(dollar_parameters(sql), values);
    if (!rows && db_.sqlstate() == kUniqueViolation) return store::store_error(store::StoreFault::conflict, rows.error().message);
    return rows;
}

Status PgSql::query(std::string_view sql, std::span<const store::SqlValue> params,
                    const std::function<void(const store::SqlRow&)>& each) {
    auto rows = run(sql, params);
    if (!rows) return rows.error();
    for (int i = 0; i < rows->size(); ++i) each(ResultRow(*rows, i));
    return Ok{};
}

Result<int64_t> PgSql::execute(std::string_view sql, std::span<const store::SqlValue> params) {
    auto rows = run(sql, params);
    if (!rows) return rows.error();
    return rows->affected();
}

}  // namespace agenthost::postgres
