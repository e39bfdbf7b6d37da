// Result<T>: a value or an Error, returned across module lines instead of throwing
// (std::expected arrives with C++23; this is the small subset we need). Result<T, E> carries a
// typed error of its own where callers decide by it (server::Refusal).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace agenthost {

struct Error {
    std::string code;     // stable, machine-readable ("manifest_invalid", "config_unknown_key", …)
    std::string message;  // one line for a person: what, where, and the fix
};

template <typename T, typename E = Error>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}
    Result(E error) : state_(std::move(error)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    // By value, so `for (auto& x : f().value())` holds what it iterates over (a reference would
    // point into the temporary Result, gone before the loop's first step).
    T value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T operator*() && { return std::move(*this).value(); }

    const E& error() const { return std::get<1>(state_); }

private:
    std::variant<T, E> state_;
};

struct Ok {};
using Status = Result<Ok>;

}  // namespace agenthost
