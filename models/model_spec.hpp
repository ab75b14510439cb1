// The model SPEC strings of the command lines, `family:key=value,...`:
//
//   mlp:layers=L,hidden=H
//   transformer:layers=L,hidden=H,heads=A,seq=S[,vocab=V]   (vocab defaults to 256)
//   unbalanced:layers=L,hidden=H
//
// (models/families.hpp describes each family.) Every value is a decimal integer
// from 1 to kMaxSpecValue; keys may come in any order, each at most once.
#pragma once

#include <string_view>

#include "models/model.hpp"

namespace gpipe::models {

// Large enough for any model this project runs, small enough that no count of
// parameters, FLOPs or elements per sample overflows.
inline constexpr int kMaxSpecValue = 1 << 20;
// Layers, lower: the balanced partitioner is about quadratic in them (16384
// layers take about half a second), and deeper models than this do not exist.
inline constexpr int kMaxModelLayers = 1 << 14;

// The model a SPEC names, its `spec` field the canonical form (keys in the
// order above, default values left out). Throws InputError, one line naming the
// spec and the key at fault: unknown family (listing the known ones), entry not
// key=value, unknown key (listing the family's keys), duplicated key, missing
// required key, value not an integer in [1, kMaxSpecValue], hidden not divisible
// by heads.
[[nodiscard]] Model parse_model(std::string_view spec);

// The family names parse_model() accepts ("mlp, transformer, unbalanced").
[[nodiscard]] std::string_view model_families();

}  // namespace gpipe::models
