// The exception every blocking wait of the executor throws once the run is
// aborted (a link's receive, the step barrier, an injected stall). It is
// not an error of its own: the first error, recorded by RunControl, is what
// the run reports; a worker that catches Aborted just stops.
#pragma once

#include <exception>

#include "base/error.hpp"

namespace gpipe::exec {

class Aborted : public std::exception {
 public:
  [[nodiscard]] const char* what() const noexcept override { return "run aborted"; }
};

// A wait ended because another process of the run failed and said so
// (exec/runtime/process_group.hpp): what() is that process's own error line,
// "rank 1 failed in 1F3: ...", which this process reports as the run's error.
class PeerFailed : public RunError {
 public:
  using RunError::RunError;
};

}  // namespace gpipe::exec
