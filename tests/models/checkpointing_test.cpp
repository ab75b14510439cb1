// Megatron's full recompute: how a stage's layers are cut into checkpointed
// chunks, and the bytes kept and held at worst, worked out by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/checkpointing.hpp"
#include "models/model.hpp"

namespace gpipe::models {
namespace {

using U = CheckpointUnit;

// embedding, five blocks, head: the transformer family's layers.
const std::vector<std::string> kStage = {"embedding", "transformer_block", "transformer_block", "transformer_block",
                                         "transformer_block", "transformer_block", "lm_head"};

TEST(CheckpointUnits, WithoutCheckpointingEveryLayerIsKeptWhole) {
  EXPECT_EQ(checkpoint_units(kStage, std::nullopt),
            (std::vector<U>{{0, 1, false}, {1, 2, false}, {2, 3, false}, {3, 4, false}, {4, 5, false},
                            {5, 6, false}, {6, 7, false}}));
}

TEST(CheckpointUnits, UniformChunksTheBlocksAndLeavesTheEnds) {
  EXPECT_EQ(checkpoint_units(kStage, Checkpointing{CheckpointMethod::uniform, 1}),
            (std::vector<U>{{0, 1, false}, {1, 2, true}, {2, 3, true}, {3, 4, true}, {4, 5, true}, {5, 6, true},
                            {6, 7, false}}));
  // Chunks of 2 from the stage's first block; the last one shorter.
  EXPECT_EQ(checkpoint_units(kStage, Checkpointing{CheckpointMethod::uniform, 2}),
            (std::vector<U>{{0, 1, false}, {1, 3, true}, {3, 5, true}, {5, 6, true}, {6, 7, false}}));
  EXPECT_EQ(checkpoint_units(kStage, Checkpointing{CheckpointMethod::uniform, 8}),
            (std::vector<U>{{0, 1, false}, {1, 6, true}, {6, 7, false}}));
}

TEST(CheckpointUnits, BlockCheckpointsTheFirstNBlocksOneByOne) {
  EXPECT_EQ(checkpoint_units(kStage, Checkpointing{CheckpointMethod::block, 2}),
            (std::vector<U>{{0, 1, false}, {1, 2, true}, {2, 3, true}, {3, 4, false}, {4, 5, false},
                            {5, 6, false}, {6, 7, false}}));
}

TEST(CheckpointUnits, EveryBlockKindIsCheckpointed) {
  for (const auto kind : {layer_kind::transformer_block, layer_kind::llama_block, layer_kind::dit_block,
                          layer_kind::mlp_block}) {
    EXPECT_TRUE(is_checkpointed_kind(kind)) << kind;
  }
  for (const auto kind : {layer_kind::embedding, layer_kind::lm_head, layer_kind::token_embedding,
                          layer_kind::rms_head, layer_kind::mse_loss, layer_kind::dit_embed, layer_kind::dit_head}) {
    EXPECT_FALSE(is_checkpointed_kind(kind)) << kind;
  }
}

TEST(CheckpointUnits, RefusesAChunkOfNoLayers) {
  EXPECT_THROW((void)checkpoint_units(kStage, Checkpointing{CheckpointMethod::uniform, 0}), InputError);
}

TEST(CheckpointedBytes, KeptAndTransientByHand) {
  // embedding A 10 (In 1), blocks A 100 (In 8) each, head A 50 (In 8).
  const std::vector<std::int64_t> a = {10, 100, 100, 100, 100, 100, 50};
  const std::vector<std::int64_t> in = {1, 8, 8, 8, 8, 8, 8};
  // None: everything kept, no transient.
  EXPECT_EQ(checkpointed_bytes(checkpoint_units(kStage, std::nullopt), a, in), (CheckpointedBytes{560, 0}));
  // Uniform 1: kept 10 + 5 x 8 + 50 = 100. Worst: before the last block
  // 10 + 4 x 8 = 42, plus its 100 = 142; before the head 10 + 40 + 50 = 100.
  EXPECT_EQ(checkpointed_bytes(checkpoint_units(kStage, Checkpointing{}), a, in), (CheckpointedBytes{100, 42}));
  // Uniform 2: chunks [1,3) [3,5) [5,6) kept 8 each: 10 + 24 + 50 = 84. Worst:
  // the second chunk, 10 + 8 + 200 = 218, so 134 above.
  EXPECT_EQ(checkpointed_bytes(checkpoint_units(kStage, Checkpointing{CheckpointMethod::uniform, 2}), a, in),
            (CheckpointedBytes{84, 134}));
  // Block 2: 10 + 8 + 8 + 300 + 50 = 376 kept; the worst is the end, 376: no transient.
  EXPECT_EQ(checkpointed_bytes(checkpoint_units(kStage, Checkpointing{CheckpointMethod::block, 2}), a, in),
            (CheckpointedBytes{376, 0}));
}

}  // namespace
}  // namespace gpipe::models
