// The project's error types. Libraries throw; only the command lines turn an
// error into one line on stderr and an exit status (2 for bad input, 1 for a
// failure while running or a bug).
#pragma once

#include <stdexcept>
#include <string>

namespace gpipe {

// Bad input: a malformed file, a wrong flag, an impossible configuration.
// The message names the file, field, flag or action at fault.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure while running a well-formed request (a worker fault, a stall).
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bug: the program broke a promise of its own (timelines/report_check.hpp),
// with nothing wrong in the input. The command lines print "internal error".
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace gpipe
