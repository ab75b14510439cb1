// The exception every blocking wait of the executor throws once the run is
// aborted (a link's receive, the step barrier, an injected stall). It is
// not an error of its own: the first error, recorded by RunControl, is what
// the run reports; a worker that catches Aborted just stops.
#pragma once

#include <exception>

namespace gpipe::exec {

class Aborted : public std::exception {
 public:
  [[nodiscard]] const char* what() const noexcept override { return "run aborted"; }
};

}  // namespace gpipe::exec
