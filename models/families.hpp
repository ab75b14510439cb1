// The model families a SPEC can name, one builder each (mlp.cpp,
// transformer.cpp, unbalanced.cpp, llama.cpp, dit.cpp), and the builders of their layers. What each
// layer kind computes and keeps for its backward is the contract in
// models/model.hpp. Builders take shapes that parse_model() has validated
// (every value >= 1, hidden divisible by heads).
//
// mlp:layers=L,hidden=H
//   block0 .. block{L-1} (mlp_block, F = 4H), loss (mse_loss).
//   Data: input x [H] floating, target [H] floating.
//
// transformer:layers=L,hidden=H,heads=A,seq=S[,vocab=V][,attn=naive|flash][,recompute=M]   (V defaults to 256:
//   a byte-level synthetic task, small enough that the head does not dwarf the blocks)
//   embed (embedding), block0 .. block{L-1} (transformer_block), head (lm_head).
//   Untied embedding and unembedding, so no weight is shared between stages.
//   Data: token ids [S] int32, next-token targets [S] int32.
//
// transformer's attn=naive|flash (default naive): what its blocks keep of
//   the attention (model.hpp).
//
// transformer's and llama's recompute=M1+M2 (core_attn, mlp, layernorm;
//   default none): the modules each block runs again in its backward instead
//   of keeping their tensors, Megatron-LM's --recompute-modules
//   (models/recompute_modules.hpp).
//
// llama:layers=L,hidden=H,heads=A[,kv_heads=G],ffn=F,seq=S,vocab=V[,attn=flash|naive][,rope_theta=R][,tied=0|1][,recompute=M]
//   embed (token_embedding), block0 .. block{L-1} (llama_block), head (rms_head).
//   G defaults to A, attn to flash, R to 500000 (Llama 3), tied to 0 (the
//   unembedding a matrix of its own, as Llama 3 8B, 70B and 405B have);
//   tied=1 makes it one matrix with the token table (Model::tied).
//   Data: as transformer's.
//
// dit:layers=L,hidden=H,heads=A,tokens=T[,patch=P,channels=C,classes=N][,attn=flash|naive][,cache=0|1]
//   embed (dit_embed), block0 .. block{L-1} (dit_block, F = 4H), head (dit_head).
//   P defaults to 2, C to 4, N to 1000 (DiT at 256 x 256: a 32 x 32 x 4
//   latent, T = 256), attn to flash. Data: the latent as T patches of P*P*C
//   values, then a timestep in [0, 1000) and a label in [0, N), as floats;
//   target [T, P*P*2C] (dit_head's).
//
// unbalanced:layers=L,hidden=H
//   As mlp, but block i has inner width F_i = H * (1 + floor(7 i / (L-1)))
//   (F_0 = H when L = 1): a ramp from H to 8H, so block costs grow with depth,
//   the last block costs 8x the first, and a split with equal layer counts
//   overloads the last stage while a cost-balanced split does not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "models/model.hpp"

namespace gpipe::models {

inline constexpr int kDefaultVocab = 256;
inline constexpr int kDefaultRopeTheta = 500000;

struct TransformerShape {
  int layers = 1;
  int hidden = 1;
  int heads = 1;
  int seq = 1;
  int vocab = kDefaultVocab;
  Attention attention = Attention::naive;
  RecomputeModules recompute;  // recompute= (models/recompute_modules.hpp)
  double dropout = 0;          // dropout=p, in [0, 1) (models/model.hpp)
};

struct LlamaShape {
  int layers = 1;
  int hidden = 1;
  int heads = 1;
  int kv_heads = 1;
  int ffn = 1;
  int seq = 1;
  int vocab = 1;
  Attention attention = Attention::flash;
  int rope_theta = kDefaultRopeTheta;
  bool tied = false;
  RecomputeModules recompute;  // recompute= (models/recompute_modules.hpp)
};

struct DitShape {
  int layers = 1;
  int hidden = 1;
  int heads = 1;
  int tokens = 1;
  int patch = 2;
  int channels = 4;
  int classes = 1000;
  Attention attention = Attention::flash;
  // cache=1: for an inference stream that generates chunk by chunk, each
  // block attends over the previous chunk's tokens too, whose keys and
  // values it keeps (2 T H per sample) from one item of a sequence to the next.
  bool cache = false;
};

// One layer of each kind, as model.hpp describes it.
[[nodiscard]] Layer mlp_block_layer(std::string name, std::int64_t hidden, std::int64_t ffn_width);
[[nodiscard]] Layer mse_loss_layer(std::int64_t hidden);
[[nodiscard]] Layer embedding_layer(const TransformerShape& shape);
[[nodiscard]] Layer transformer_block_layer(std::string name, const TransformerShape& shape);
[[nodiscard]] Layer lm_head_layer(const TransformerShape& shape);

[[nodiscard]] Model build_mlp(int layers, int hidden);
// The residual-MLP families (mlp, unbalanced): `layers` mlp_blocks, block i
// with inner width ffn_width(i), then an mse_loss layer.
[[nodiscard]] Model build_residual_mlp(std::string_view family, int layers, int hidden,
                                       const std::function<std::int64_t(int)>& ffn_width);
[[nodiscard]] Model build_transformer(const TransformerShape& shape);
[[nodiscard]] Model build_unbalanced(int layers, int hidden);
[[nodiscard]] Model build_llama(const LlamaShape& shape);
[[nodiscard]] Model build_dit(const DitShape& shape);

// The llama and dit families' layers, of `model` (its shape fields set).
[[nodiscard]] Layer token_embedding_layer(const Model& model);
[[nodiscard]] Layer llama_block_layer(std::string name, const Model& model, std::int64_t ffn_width);
[[nodiscard]] Layer rms_head_layer(const Model& model);
[[nodiscard]] Layer dit_embed_layer(const Model& model);
[[nodiscard]] Layer dit_block_layer(std::string name, const Model& model);
[[nodiscard]] Layer dit_head_layer(const Model& model);

// F_i of block `block` of unbalanced:layers=`layers`,hidden=`hidden`.
[[nodiscard]] std::int64_t unbalanced_ffn_width(int block, int layers, int hidden);

}  // namespace gpipe::models
