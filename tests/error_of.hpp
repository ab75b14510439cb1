// For tests of error paths: the message of the InputError (or logic_error) a
// call throws, so a test can assert the whole line a user would read.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "base/error.hpp"

namespace gpipe::testing {

// The InputError's message, or "no error" when the call returns normally.
inline std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The message of the std::logic_error (a bug of the caller) a call throws, or
// "no error" when it returns normally.
inline std::string logic_error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace gpipe::testing
