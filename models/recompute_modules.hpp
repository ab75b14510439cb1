// Megatron-LM's --recompute-modules, as the transformer and llama families'
// blocks run them (the spec's recompute=core_attn+mlp+layernorm): each named
// module of every block drops what it would keep for the backward, and the
// block's backward runs the module's forward again just before it needs
// them (torch.utils.checkpoint around the module, as Megatron-LM does).
// What each drops and adds (models/model.hpp has the block's stash):
//   core_attn  the attention core's P [A,S,S] (attn=naive) or its
//              log-sum-exp [A,S] (flash); its backward adds the core's
//              forward FLOPs (Korthikanti et al. 2022's selective recompute,
//              Megatron-LM's --recompute-granularity selective)
//   mlp        the feed-forward's inner tensors (GPT-2: pre-GELU, GELU out;
//              llama: gate, up, silu(gate) up); its backward adds the whole
//              MLP's forward, its down projection and that projection's
//              tensor-parallel collective included, as a checkpoint of the
//              module recomputes them
//   layernorm  the two norms' outputs and statistics; no FLOPs
// The rebuilt tensors live within the block's backward only, as its other
// temporaries do, so the stash the simulator counts is what is kept.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpipe::models {

struct RecomputeModules {
  bool core_attn = false;
  bool mlp = false;
  bool layernorm = false;

  [[nodiscard]] bool any() const { return core_attn || mlp || layernorm; }
  bool operator==(const RecomputeModules&) const = default;
};

// "core_attn+mlp" (the names joined by '+', each once, in any order), or
// nullopt for anything else.
[[nodiscard]] std::optional<RecomputeModules> parse_recompute_modules(std::string_view text);
// The canonical form: the names in the order core_attn, mlp, layernorm,
// joined by '+'; "" for none.
[[nodiscard]] std::string to_string(const RecomputeModules& modules);
// "core_attn, mlp, layernorm", for help texts and errors.
[[nodiscard]] std::string_view recompute_module_names();

// The FLOPs per sample a block's backward adds to run its modules again:
// the attention core's forward (core_attn) and the MLP's whole forward (mlp),
// given per sample; layernorm adds none.
[[nodiscard]] double recomputed_flops(const RecomputeModules& modules, double attention_forward_flops,
                                      double mlp_forward_flops);

// A bit each, for the model spec's integer values: core_attn 1, mlp 2, layernorm 4.
[[nodiscard]] int to_bits(const RecomputeModules& modules);
[[nodiscard]] RecomputeModules from_bits(int bits);

}  // namespace gpipe::models
