// The per-micro-batch stashes of one pipeline stage (exec/runtime/stage.hpp)
// and what each holds: one stash per layer per micro-batch, and a state that
// says whether it holds nothing, everything F kept, only the stage's
// boundary input (after F when R follows), or what a split backward's W
// needs (after I, until W). A valid schedule only ever
// finds the state it expects; anything else is a logic error naming the
// action and what it found. `Stash` has a `tensors` vector whose first entry
// of the first layer is the stage's input, as every layer kind keeps it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gpipe::exec {

template <class Stash>
class StashBook {
 public:
  enum class Kept : std::uint8_t { nothing, everything, boundary, weight_stash };

  StashBook(int num_microbatches, std::size_t num_layers)
      : num_layers_(num_layers),
        stashes_(static_cast<std::size_t>(num_microbatches)),
        kept_(static_cast<std::size_t>(num_microbatches), Kept::nothing) {}

  // The stashes of `microbatch`, which must hold `expected` (`action` names the caller).
  [[nodiscard]] std::vector<Stash>& expect(int microbatch, Kept expected, const char* action) {
    const auto m = static_cast<std::size_t>(microbatch);
    if (m >= kept_.size())
      throw std::out_of_range(fmt::format("{}: no micro-batch {}", action, microbatch));
    if (kept_[m] != expected) {
      static constexpr const char* names[] = {"nothing", "the full stash", "the input only",
                                              "the weight-gradient stash"};
      throw std::logic_error(fmt::format("{} of micro-batch {} found {} kept", action, microbatch,
                                         names[static_cast<int>(kept_[m])]));
    }
    return stashes_[m];
  }

  // Empty stashes for a forward to fill; the state becomes `everything`.
  [[nodiscard]] std::vector<Stash>& fill(int microbatch) {
    auto& stash = stashes_[static_cast<std::size_t>(microbatch)];
    stash.clear();
    stash.resize(num_layers_);
    kept_[static_cast<std::size_t>(microbatch)] = Kept::everything;
    return stash;
  }

  // After F when R follows: everything but the stage's input is freed.
  void keep_boundary(int microbatch) {
    auto& stash = expect(microbatch, Kept::everything, "dropping the stash");
    auto input = std::move(stash.front().tensors.front());
    stash.clear();
    stash.resize(num_layers_);
    stash.front().tensors.push_back(std::move(input));
    kept_[static_cast<std::size_t>(microbatch)] = Kept::boundary;
  }

  // R: takes the kept boundary input out for the forward to run again from.
  [[nodiscard]] auto take_boundary(int microbatch) {
    auto& stash = expect(microbatch, Kept::boundary, "R");
    return std::move(stash.front().tensors.front());
  }

  // After I: each layer's stash was consumed and `weight_stashes` (one per
  // layer) hold what W needs; the state becomes `weight_stash`.
  void hold_for_weight(int microbatch, std::vector<Stash> weight_stashes) {
    (void)expect(microbatch, Kept::everything, "I");
    if (weight_stashes.size() != num_layers_) {
      throw std::logic_error(fmt::format("I of micro-batch {}: {} weight-gradient stashes for {} layers",
                                         microbatch, weight_stashes.size(), num_layers_));
    }
    stashes_[static_cast<std::size_t>(microbatch)] = std::move(weight_stashes);
    kept_[static_cast<std::size_t>(microbatch)] = Kept::weight_stash;
  }

  // After B or W: the stashes were consumed.
  void consumed(int microbatch) {
    stashes_[static_cast<std::size_t>(microbatch)].clear();
    kept_[static_cast<std::size_t>(microbatch)] = Kept::nothing;
  }

  // After a failed run: every stash is dropped, whatever it held.
  void clear() noexcept {
    for (auto& stash : stashes_) stash.clear();
    std::fill(kept_.begin(), kept_.end(), Kept::nothing);
  }

 private:
  std::size_t num_layers_;
  std::vector<std::vector<Stash>> stashes_;  // [micro-batch][layer]
  std::vector<Kept> kept_;                   // per micro-batch
};

}  // namespace gpipe::exec
