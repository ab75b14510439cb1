// Exact accounting of a rank's activation memory. Every Tensor charged to an
// account adds its bytes while it lives and gives them back when it is freed,
// so the account's peak is the true peak of what the rank kept, byte for byte,
// and can be compared with the simulator's prediction (docs/design.md, "Simulation
// semantics": the stash of each F, dropped and rebuilt around R, freed by B).
//
// Thread-safe: a tensor may be freed on another thread than the one that
// charged it (a message handed between ranks is charged to neither).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace gpipe::exec {

class MemoryAccount {
 public:
  // Called with the new total after every change, under the account's lock,
  // in the order the changes happened (the executor records trace samples).
  using Observer = std::function<void(std::int64_t bytes)>;

  void charge(std::int64_t bytes);
  void refund(std::int64_t bytes);

  [[nodiscard]] std::int64_t bytes() const;
  [[nodiscard]] std::int64_t peak() const;
  // Forgets the peak (sets it to the current total), e.g. at the start of a step.
  void reset_peak();
  void set_observer(Observer observer);

 private:
  mutable std::mutex mutex_;
  std::int64_t bytes_ = 0;
  std::int64_t peak_ = 0;
  Observer observer_;
};

}  // namespace gpipe::exec
