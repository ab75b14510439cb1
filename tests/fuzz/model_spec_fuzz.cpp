// Fuzz target: a model spec (--model), e.g. transformer:layers=8,hidden=1024,heads=16,seq=512,
// then what the planner and the profiler derive from it: each layer's parameter
// bytes and its bytes at a large micro-batch, where a spec's largest values
// would overflow int64 if the parser let them through.
#include "models/model_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    using namespace gpipe::models;
    const Model model = parse_model(gpipe::fuzz::text_of(data, size));
    (void)model.params();
    for (const auto& layer : model.layers) {
      (void)param_bytes(layer, DType::fp32);
      (void)bytes_at(layer, 256, DType::fp32);
      (void)weight_grad_stash_bytes_at(layer, 256, DType::fp32);
    }
  });
  return 0;
}
