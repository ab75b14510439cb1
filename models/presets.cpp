#include "models/presets.hpp"

#include <array>

namespace gpipe::models {

namespace {

// Llama: Meta's params.json of each release (dim, n_layers, n_heads,
// n_kv_heads, vocab_size; the FFN width from its multiplier rule, as
// torchtitan's llama3 configs give it), at the 8192-token pretraining
// context. DiT: facebookresearch/DiT models.py (DiT_XL_2, DiT_L_2, DiT_B_2)
// at 256 x 256 (a 32 x 32 x 4 latent: T = 256).
constexpr std::array kPresets{
    Preset{"llama3-8b", "llama:layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=8192,vocab=128256",
           8'030'261'248, 0,
           "Meta-Llama-3-8B: 8,030,261,248 parameters in its safetensors index (model card: 8B)"},
    Preset{"llama3-70b", "llama:layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672,seq=8192,vocab=128256",
           70'553'706'496, 0,
           "Meta-Llama-3-70B: 70,553,706,496 parameters in its safetensors index (model card: 70B)"},
    Preset{"llama3.1-405b",
           "llama:layers=126,hidden=16384,heads=128,kv_heads=8,ffn=53248,seq=8192,vocab=128256",
           405'853'388'800, 0,
           "Meta-Llama-3.1-405B: 405,853,388,800 parameters in its safetensors index (model card: 405B)"},
    // Llama 3.2's small models tie the unembedding to the token table.
    Preset{"llama3.2-1b",
           "llama:layers=16,hidden=2048,heads=32,kv_heads=8,ffn=8192,seq=8192,vocab=128256,tied=1",
           1'235'814'400, 0,
           "Llama-3.2-1B: its config.json (16 layers, hidden 2048, 32/8 heads, FFN 8192, tie_word_embeddings "
           "true) counts 1,235,814,400 parameters, the token table once (model card: 1.23B)"},
    Preset{"llama3.2-3b",
           "llama:layers=28,hidden=3072,heads=24,kv_heads=8,ffn=8192,seq=8192,vocab=128256,tied=1",
           3'212'749'824, 0,
           "Llama-3.2-3B: its config.json (28 layers, hidden 3072, 24/8 heads, FFN 8192, tie_word_embeddings "
           "true) counts 3,212,749,824 parameters, the token table once (model card: 3.21B)"},
    Preset{"dit-xl-2", "dit:layers=28,hidden=1152,heads=16,tokens=256", 675'129'632, 118.64e9,
           "DiT (arXiv 2212.09748) Table 4: DiT-XL/2 675 M parameters, 118.64 Gflops; "
           "675,129,632 is what facebookresearch/DiT's train.py prints"},
    Preset{"dit-l-2", "dit:layers=24,hidden=1024,heads=16,tokens=256", 458'102'816, 80.71e9,
           "DiT (arXiv 2212.09748) Table 4: DiT-L/2 458 M parameters, 80.71 Gflops; "
           "458,102,816 counted from facebookresearch/DiT models.py"},
    Preset{"dit-b-2", "dit:layers=12,hidden=768,heads=12,tokens=256", 130'512'416, 23.01e9,
           "DiT (arXiv 2212.09748) Table 4: DiT-B/2 130 M parameters, 23.01 Gflops; "
           "130,512,416 counted from facebookresearch/DiT models.py"},
};

}  // namespace

std::span<const Preset> presets() { return kPresets; }

const Preset* find_preset(std::string_view name) {
  for (const Preset& preset : kPresets) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string preset_names() {
  std::string names;
  for (const Preset& preset : kPresets) {
    if (!names.empty()) names += ", ";
    names += preset.name;
  }
  return names;
}

}  // namespace gpipe::models
