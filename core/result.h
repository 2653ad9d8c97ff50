// Errors as values for every allox module.
//
// A fallible function returns Expected<T>: either a T or an Error whose message is written for
// the person who supplied the input (it names the file, line and field where there is one).
// Status is Expected<void>'s stand-in for functions with nothing to return. Checking ok() before
// value() is the caller's job; value() on an error throws std::logic_error, a programming bug.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace allox {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Expected(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Expected*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(state_); }
  const std::string& message() const { return error().message; }

 private:
  T& checked() {
    if (!ok()) throw std::logic_error("Expected::value() on an error: " + error().message);
    return std::get<0>(state_);
  }
  std::variant<T, Error> state_;
};

// Success carries nothing; failure carries an Error.
using Status = Expected<std::monostate>;
inline Status OkStatus() {
  return std::monostate{};
}

}  // namespace allox
