// Starting gpipe-run itself as K processes, one rank each, from inside a
// command (`gpipe-run validate --launcher`): the launcher's command line for
// K processes, and one run of it with its output captured. `mpirun` stands
// for "mpirun -np K", with --oversubscribe when K exceeds this machine's
// cores and --allow-run-as-root when run as root (Open MPI refuses both
// otherwise); any other text is a command prefix in which {K} is replaced,
// e.g. "srun -n {K}" or "mpirun -np {K} --hostfile hosts".
#pragma once

#include <string>
#include <vector>

namespace gpipe::tools {

class Launcher {
 public:
  // InputError for an empty text, or a prefix other than mpirun without {K}.
  explicit Launcher(std::string text);

  // The shell words that start `processes` processes.
  [[nodiscard]] std::string prefix(int processes) const;

  struct Outcome {
    int status = 0;        // the launcher's exit status
    std::string command;   // as run, for messages
    std::string out, err;  // what the processes printed
  };
  // Runs this gpipe-run with `args` as `processes` processes, and waits.
  [[nodiscard]] Outcome run(int processes, const std::vector<std::string>& args) const;

 private:
  std::string text_;
};

}  // namespace gpipe::tools
