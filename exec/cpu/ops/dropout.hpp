// Dropout (models/model.hpp's dropout=p), inverted: an element is kept with
// probability 1 - p and scaled by 1 / (1 - p), so evaluation needs no rescale.
//
// Its masks are counter-based, not drawn from a generator's running state:
// whether element j of a sample is kept at a site is a hash of (the layer's
// key, the step, the sample's row in the mini-batch, the site, j). So a
// recompute draws the same mask again, and every schedule, partition,
// micro-batch size, data-parallel replica and tensor-parallel part that
// computes a sample drops the same elements of it: runs that differ only in
// how they are laid out train the same model bit for bit.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// Where in a layer a mask is drawn (the hash tells them apart).
enum class DropoutSite : std::uint8_t { embedding, attention_out, mlp_out, probabilities };

// The draws of one forward of a micro-batch at one layer.
struct DropoutDraw {
  std::uint64_t layer_key = 0;     // the layer's (exec/cpu/ops/init.hpp's NormalInit::key)
  std::int64_t step = 0;
  std::int64_t first_sample = 0;   // the micro-batch's first sample's row in the mini-batch
  double probability = 0;          // p; 0, or not training: nothing is dropped
  bool training = false;

  [[nodiscard]] bool drops() const { return training && probability > 0; }
  // What a kept element is multiplied by: 1 / (1 - p), or 1 when nothing drops.
  [[nodiscard]] float scale() const;
  // Whether element `element` of sample `sample` (of the micro-batch) is kept at `site`.
  [[nodiscard]] bool keeps(DropoutSite site, std::int64_t sample, std::int64_t element) const;
};

// One sample's mask at a site, element by element: flash attention draws its
// tiles' in the kernel (as FlashAttention's Philox does) and keeps none.
class SampleMask {
 public:
  SampleMask(const DropoutDraw& draw, DropoutSite site, std::int64_t sample);
  [[nodiscard]] bool keeps(std::int64_t element) const;

 private:
  std::uint64_t key_ = 0;
  std::uint64_t threshold_ = 0;
  bool drops_ = false;
};

// mask[n * per_sample + j] = keeps(site, n, first_element + j) for the
// micro-batch's `samples` samples: 1 kept, 0 dropped. `first_element` places
// a part's slice in the whole sample (a tensor-parallel part's heads).
void draw_mask(const DropoutDraw& draw, DropoutSite site, std::int64_t samples, std::int64_t per_sample,
               std::int64_t first_element, std::uint8_t* mask);

// y[i] = mask[i] ? x[i] * scale : 0, for i in [0, count); y may be x.
void apply_mask(std::int64_t count, const std::uint8_t* mask, float scale, const float* x, float* y);

}  // namespace gpipe::exec::cpu
