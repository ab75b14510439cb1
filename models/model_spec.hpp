// The model SPEC strings of the command lines, `family:key=value,...`:
//
//   mlp:layers=L,hidden=H
//   transformer:layers=L,hidden=H,heads=A,seq=S[,vocab=V][,attn=naive|flash][,recompute=M][,dropout=p]
//   unbalanced:layers=L,hidden=H
//   llama:layers=L,hidden=H,heads=A[,kv_heads=G],ffn=F,seq=S,vocab=V[,attn=flash|naive][,rope_theta=R][,tied=0|1]
//   dit:layers=L,hidden=H,heads=A,tokens=T[,patch=P,channels=C,classes=N][,attn=flash|naive][,cache=0|1]
//   PRESET[:key=value,...]   a named shape (models/presets.hpp), keys overriding it
//
// (models/families.hpp describes each family and its defaults.) attn is
// flash or naive, recompute modules joined by '+', dropout a probability
// from 0 to 0.999 with at most three decimals ("0.1"); every other value is
// a decimal integer from 1 to kMaxSpecValue; keys may come in any order,
// each at most once.
#pragma once

#include <string>
#include <string_view>

#include "models/model.hpp"

namespace gpipe::models {

// Large enough for any model this project runs, small enough that no count of
// parameters, FLOPs or elements per sample overflows.
inline constexpr int kMaxSpecValue = 1 << 20;
// Layers, lower: the balanced partitioner is about quadratic in them (16384
// layers take about half a second), and deeper models than this do not exist.
inline constexpr int kMaxModelLayers = 1 << 14;

// The model a SPEC names, its `spec` field the canonical family form (keys in
// the order above, default values left out; a preset's too). Throws
// InputError, one line naming the spec and the key at fault: unknown family
// or preset (listing both), entry not key=value, unknown key (listing the
// family's keys), duplicated key, missing required key, value not an integer
// in [1, kMaxSpecValue] (attn: not flash or naive), hidden not divisible by
// heads, heads not divisible by kv_heads, an odd llama head width.
[[nodiscard]] Model parse_model(std::string_view spec);
// `model` (whole: not split over a tensor-parallel group) with its blocks
// recomputing `modules` instead (models/recompute_modules.hpp): its spec's
// recompute= replaced, and parsed again. InputError for a family without
// blocks to recompute when `modules` names any.
[[nodiscard]] Model with_recompute_modules(const Model& model, const RecomputeModules& modules);

// The --model help text: every family's form and the presets.
[[nodiscard]] std::string model_spec_help();

// The family names parse_model() accepts ("mlp, transformer, unbalanced, llama, dit").
[[nodiscard]] std::string_view model_families();

}  // namespace gpipe::models
