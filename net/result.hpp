// Errors as values for set-up paths (opening files, parsing configuration).
// The verbs layer reports plain errno values; this type carries the errno and
// the human text (libpcap's message, the bad key) a user needs to act on it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace rdmasim {

struct Error {
    int code = 0;        // an errno value (EINVAL, ENOENT, ...)
    std::string message; // what went wrong, naming the file / key / value
};

template <class T> class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }
    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const T& value() const& { return std::get<0>(v_); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}

    [[nodiscard]] bool ok() const noexcept { return !failed_; }
    explicit operator bool() const noexcept { return ok(); }
    const Error& error() const { return error_; }

private:
    Error error_;
    bool failed_ = false;
};

inline Error make_error(int code, std::string message) { return Error{code, std::move(message)}; }

} // namespace rdmasim
