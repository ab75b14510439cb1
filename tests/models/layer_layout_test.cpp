// The layer layouts (models/layer_layout.hpp): each kind's parameters and
// stash, written once, give model.hpp's closed forms exactly; the enums the
// backends index with name the tensors they mean; and a layer of a model
// gets the layout of its own dimensions.
#include "models/layer_layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/families.hpp"
#include "models/model.hpp"

namespace gpipe::models {
namespace {

std::vector<std::string> parameter_names(const LayerLayout& l) {
  std::vector<std::string> names;
  for (const auto& p : l.parameters) names.push_back(p.name);
  return names;
}

TEST(LayerLayout, CountsAreModelHppsClosedForms) {
  const std::int64_t h = 12, f = 40, s = 7, a = 3, v = 29;
  const LayerDims d{.hidden = h, .ffn_width = f, .seq = s, .heads = a, .vocab = v};

  const LayerLayout mlp = layer_layout(layer_kind::mlp_block, d);
  EXPECT_EQ(mlp.parameter_count(), 2 * h + (f * h + f) + (h * f + h));
  EXPECT_EQ(mlp.kept_elements(Element::floating), 2 * h + 2 * f + 2);
  EXPECT_EQ(mlp.kept_elements(Element::index), 0);

  const LayerLayout mse = layer_layout(layer_kind::mse_loss, d);
  EXPECT_EQ(mse.parameter_count(), 0);
  EXPECT_EQ(mse.kept_elements(Element::floating), 2 * h);

  const LayerLayout embed = layer_layout(layer_kind::embedding, d);
  EXPECT_EQ(embed.parameter_count(), v * h + s * h);
  EXPECT_EQ(embed.kept_elements(Element::floating), 0);
  EXPECT_EQ(embed.kept_elements(Element::index), s);

  const LayerLayout block = layer_layout(layer_kind::transformer_block,
                                         {.hidden = h, .ffn_width = 4 * h, .seq = s, .heads = a});
  EXPECT_EQ(block.parameter_count(), 12 * h * h + 13 * h);
  EXPECT_EQ(block.kept_elements(Element::floating), 16 * s * h + 4 * s + a * s * s);

  const LayerLayout head = layer_layout(layer_kind::lm_head, d);
  EXPECT_EQ(head.parameter_count(), 2 * h + v * h);
  EXPECT_EQ(head.kept_elements(Element::floating), 2 * s * h + 2 * s + s * v);
  EXPECT_EQ(head.kept_elements(Element::index), s);
}

// What a split backward's W keeps: each Linear's input and output gradient,
// at most the stash (a profile's weight_grad_stash_bytes <= activation_bytes).
TEST(LayerLayout, WeightStashesAreModelHppsClosedFormsAndAtMostTheStash) {
  const std::int64_t h = 12, f = 40, s = 7, a = 3, v = 29;
  const LayerDims d{.hidden = h, .ffn_width = f, .seq = s, .heads = a, .vocab = v};
  const LayerDims gpt{.hidden = h, .ffn_width = 4 * h, .seq = s, .heads = a, .vocab = v};
  EXPECT_EQ(layer_layout(layer_kind::mlp_block, d).weight_kept_elements(Element::floating), 2 * h + 2 * f);
  EXPECT_EQ(layer_layout(layer_kind::mse_loss, d).weight_kept.size(), 0U);
  EXPECT_EQ(layer_layout(layer_kind::embedding, d).weight_kept.size(), 0U);
  EXPECT_EQ(layer_layout(layer_kind::transformer_block, gpt).weight_kept_elements(Element::floating),
            16 * s * h);
  EXPECT_EQ(layer_layout(layer_kind::transformer_block, d).weight_kept_elements(Element::floating),
            8 * s * h + 2 * s * f);
  EXPECT_EQ(layer_layout(layer_kind::lm_head, d).weight_kept_elements(Element::floating), s * h + s * v);
  for (const std::string_view kind : {layer_kind::mlp_block, layer_kind::mse_loss, layer_kind::embedding,
                                      layer_kind::transformer_block, layer_kind::lm_head}) {
    for (const LayerDims& dims : {d, gpt, LayerDims{.hidden = 2, .ffn_width = 1, .seq = 1, .heads = 1, .vocab = 1}}) {
      const LayerLayout l = layer_layout(kind, dims);
      const auto bytes = [](std::int64_t floating, std::int64_t index) { return 4 * floating + 4 * index; };
      EXPECT_LE(bytes(l.weight_kept_elements(Element::floating), l.weight_kept_elements(Element::index)),
                bytes(l.kept_elements(Element::floating), l.kept_elements(Element::index)))
          << kind;
    }
  }
  {
    using namespace layout::transformer_block;
    const LayerLayout l = layer_layout(layer_kind::transformer_block, d);
    ASSERT_EQ(l.weight_kept.size(), weight_kept::kCount);
    EXPECT_EQ(l.weight_kept[weight_kept::kDQkv].name, "d_qkv");
    EXPECT_EQ(l.weight_kept_shape(weight_kept::kDPreGelu, 5), (std::vector<std::int64_t>{5, s, f}));
  }
}

TEST(LayerLayout, TheEnumsNameTheTensorsTheyIndex) {
  const LayerDims d{.hidden = 8, .ffn_width = 32, .seq = 4, .heads = 2, .vocab = 16};
  {
    using namespace layout::transformer_block;
    const LayerLayout l = layer_layout(layer_kind::transformer_block, d);
    EXPECT_EQ(parameter_names(l),
              (std::vector<std::string>{"ln1.gamma", "ln1.beta", "wqkv", "bqkv", "wo", "bo",
                                        "ln2.gamma", "ln2.beta", "w1", "b1", "w2", "b2"}));
    ASSERT_EQ(l.parameters.size(), kParamCount);
    ASSERT_EQ(l.kept.size(), kKeptCount);
    EXPECT_EQ(l.parameters[kBqkv].name, "bqkv");
    EXPECT_EQ(l.kept[kProbs].name, "attention.probs");
    EXPECT_EQ(l.kept_shape(kProbs, 5), (std::vector<std::int64_t>{5, 2, 4, 4}));
    EXPECT_EQ(l.kept_shape(kStats2, 5), (std::vector<std::int64_t>{5, 4, 2}));
  }
  {
    using namespace layout::lm_head;
    const LayerLayout l = layer_layout(layer_kind::lm_head, d);
    EXPECT_EQ(parameter_names(l), (std::vector<std::string>{"ln.gamma", "ln.beta", "wu"}));
    EXPECT_EQ(l.kept[kTargets].element, Element::index);
    EXPECT_EQ(l.kept_shape(kProbs, 3), (std::vector<std::int64_t>{3, 4, 16}));
  }
  {
    using namespace layout::mlp_block;
    const LayerLayout l = layer_layout(layer_kind::mlp_block, d);
    EXPECT_EQ(parameter_names(l),
              (std::vector<std::string>{"ln.gamma", "ln.beta", "w1", "c1", "w2", "c2"}));
    EXPECT_EQ(l.parameters[kW1].shape, (std::vector<std::int64_t>{32, 8}));
    EXPECT_EQ(l.parameters[kGamma].init, Init::ones);
    EXPECT_EQ(l.parameters[kC1].init, Init::zeros);
    EXPECT_EQ(l.parameters[kW2].init, Init::normal);
    EXPECT_EQ(l.kept[kGelu].name, "gelu");
  }
}

TEST(LayerLayout, ALayerOfAModelGetsItsOwnDimensions) {
  const Model m = build_unbalanced(4, 16);  // block i: F_i grows with depth
  for (std::size_t i = 0; i + 1 < m.layers.size(); ++i) {
    const LayerLayout l = layer_layout(m, m.layers[i]);
    EXPECT_EQ(l.parameters[layout::mlp_block::kW1].shape,
              (std::vector<std::int64_t>{m.layers[i].ffn_width, 16}))
        << m.layers[i].name;
    EXPECT_EQ(l.parameter_count(), m.layers[i].params) << m.layers[i].name;
  }
}

TEST(LayerLayout, AnUnknownKindIsAnInputError) {
  EXPECT_THROW((void)layer_layout("conv", {}), InputError);
}

}  // namespace
}  // namespace gpipe::models
