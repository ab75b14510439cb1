// Profiles built in code for planner and simulator tests: every layer alike,
// so the closed forms of the paper hold and expectations can be written by hand.
#pragma once

#include <string>

#include "profiles/profile.hpp"

namespace gpipe::testing {

// `layers` identical layers: at micro-batch size 1, fwd_us / bwd_us, and
// activation / input bytes per sample; a free link (zero latency, no bytes).
inline profiles::Profile uniform_profile(int layers, double fwd_us, double bwd_us,
                                         std::int64_t activation_bytes = 0,
                                         std::int64_t input_bytes = 0,
                                         std::int64_t param_bytes = 400) {
  profiles::Profile p;
  p.device = "test device";
  p.source = "analytic";
  p.dtype = "fp32";
  p.model = "test";
  p.link = {0.0, 1.0};
  for (int i = 0; i < layers; ++i) {
    profiles::LayerProfile layer;
    layer.name = "layer" + std::to_string(i);
    layer.kind = "test";
    layer.param_bytes = param_bytes;
    profiles::ProfileSample sample;
    sample.micro_batch_size = 1;
    sample.fwd_us = fwd_us;
    sample.bwd_us = bwd_us;
    sample.input_bytes = input_bytes;
    sample.output_bytes = 0;
    sample.activation_bytes = activation_bytes;
    layer.samples = {sample};
    p.layers.push_back(layer);
  }
  return p;
}

}  // namespace gpipe::testing
