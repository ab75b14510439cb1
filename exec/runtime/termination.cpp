#include "exec/runtime/termination.hpp"

#include <csignal>

namespace gpipe::exec {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) { received = signal; }

}  // namespace

void catch_termination_signals() {
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int termination_signal() { return received; }

}  // namespace gpipe::exec
