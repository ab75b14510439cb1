// make_layer_part(): one part of a block split over a tensor-parallel group,
// its weights the whole layer's slice, so that the group's T parts compute
// what the whole layer computes (Megatron-LM's split, models/tensor_parallel.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string_view>
#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "models/context_parallel.hpp"
#include "models/layer_layout.hpp"
#include "models/tensor_parallel.hpp"

namespace gpipe::exec::cpu {
namespace {

// The rows [first, first + count) of a [rows, cols] matrix (or of a vector,
// cols 1), appended to `out`.
void take_rows(std::span<const float> whole, std::int64_t cols, std::int64_t first, std::int64_t count,
               std::vector<float>& out) {
  const float* from = whole.data() + first * cols;
  out.insert(out.end(), from, from + count * cols);
}

// The columns [first, first + count) of a [rows, cols] matrix.
void take_columns(std::span<const float> whole, std::int64_t rows, std::int64_t cols, std::int64_t first,
                  std::int64_t count, std::vector<float>& out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* from = whole.data() + r * cols + first;
    out.insert(out.end(), from, from + count);
  }
}

// How part t of T takes each parameter of the whole: all of it, rows (the
// outputs of a column-parallel Linear, stored [out, in]; for Wqkv the part's
// heads of q, of k and of v), or columns (the inputs of a row-parallel one).
enum class Slice : std::uint8_t { whole, rows, qkv_rows, columns };

std::vector<Slice> slices_of(std::string_view kind) {
  if (kind == models::layer_kind::llama_block) {
    namespace l = models::layout::llama_block;
    std::vector<Slice> s(l::kParamCount, Slice::whole);
    s[l::kWqkv] = Slice::qkv_rows;
    s[l::kWo] = Slice::columns;
    s[l::kW1] = s[l::kW3] = Slice::rows;
    s[l::kW2] = Slice::columns;
    return s;
  }
  namespace l = models::layout::transformer_block;
  std::vector<Slice> s(l::kParamCount, Slice::whole);
  s[l::kWqkv] = s[l::kBqkv] = Slice::qkv_rows;
  s[l::kWo] = Slice::columns;
  s[l::kW1] = s[l::kB1] = Slice::rows;
  s[l::kW2] = Slice::columns;
  return s;
}

}  // namespace

bool splits(std::string_view kind) {
  return kind == models::layer_kind::llama_block || kind == models::layer_kind::transformer_block;
}

std::vector<float> parameter_part(const models::Model& model, int index, std::size_t param,
                                  std::span<const float> whole, std::span<const std::int64_t> shape, int part,
                                  int parts) {
  const models::Layer& spec = model.layers.at(static_cast<std::size_t>(index));
  const std::int64_t rows = shape.empty() ? 1 : shape[0];
  const std::int64_t cols = shape.size() > 1 ? shape[1] : 1;
  const std::int64_t d = model.hidden / model.heads;
  const std::int64_t q = model.heads * d;  // q's rows; k's and v's follow
  const std::int64_t kv = (spec.kind == models::layer_kind::llama_block ? model.kv_heads : model.heads) * d;
  std::vector<float> values;
  switch (slices_of(spec.kind).at(param)) {
    case Slice::whole:
      values.assign(whole.begin(), whole.end());
      break;
    case Slice::rows:
      take_rows(whole, cols, part * (rows / parts), rows / parts, values);
      break;
    case Slice::qkv_rows:
      take_rows(whole, cols, part * (q / parts), q / parts, values);
      take_rows(whole, cols, q + part * (kv / parts), kv / parts, values);
      take_rows(whole, cols, q + kv + part * (kv / parts), kv / parts, values);
      break;
    case Slice::columns:
      take_columns(whole, rows, cols, part * (cols / parts), cols / parts, values);
      break;
  }
  return values;
}

std::unique_ptr<Layer> make_layer_part(const models::Model& model, int index, std::uint64_t seed,
                                       TensorParallelComm& group, ContextParallelComm* context) {
  const int t = group.size();
  const models::Layer& spec = model.layers.at(static_cast<std::size_t>(index));
  // The rest (embeddings, heads) is whole in every part: not vocabulary-parallel yet.
  if (t == 1 || !splits(spec.kind)) {
    return context != nullptr ? make_context_layer(model, index, seed, *context) : make_layer(model, index, seed);
  }
  // Over a context group too: the tensor split first (models/context_parallel.hpp).
  const models::Model split = context != nullptr ? models::split_tensor_then_context(model, t)
                                                 : models::split_tensor_parallel(model, {.degree = t});
  const models::Layer& part_spec = split.layers.at(static_cast<std::size_t>(index));
  NormalInit init(seed, index);
  std::unique_ptr<Layer> part = spec.kind == models::layer_kind::llama_block
                                    ? make_llama_block(split, part_spec, init, &group, context)
                                    : make_transformer_block(split, part_spec, init, &group);
  const models::Model whole_model = models::unsplit_context(model);
  const std::unique_ptr<Layer> whole = make_layer(whole_model, index, seed);
  auto& to = part->parameters();
  for (std::size_t p = 0; p < to.size(); ++p) {
    Tensor& w = whole->parameters().at(p).value;
    const std::vector<float> values = parameter_part(whole_model, index, p, w.f32(), w.shape(), group.rank(), t);
    Tensor& value = to[p].value;
    if (static_cast<std::int64_t>(values.size()) != value.numel()) {
      throw std::logic_error(fmt::format("layer {}: part {} of {} of {} has {} values, its layout {}", spec.name,
                                         group.rank(), t, to[p].name, values.size(), value.numel()));
    }
    std::copy(values.begin(), values.end(), value.f32().begin());
  }
  return part;
}

}  // namespace gpipe::exec::cpu
