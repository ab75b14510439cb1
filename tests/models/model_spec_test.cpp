// Model SPEC strings: parsing, defaults, the canonical form, and every error,
// each naming the spec and the key at fault.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/families.hpp"
#include "models/model_spec.hpp"

namespace gpipe::models {
namespace {

// Expects parse_model(spec) to throw an InputError whose one-line message names
// the spec and contains every fragment.
void expect_error(const std::string& spec, const std::vector<std::string>& fragments) {
  try {
    (void)parse_model(spec);
    ADD_FAILURE() << "no error for '" << spec << "'";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("model spec '" + spec + "'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << message;
    }
  }
}

TEST(ModelSpec, ParsesEachFamily) {
  EXPECT_EQ(parse_model("mlp:layers=3,hidden=16"), build_mlp(3, 16));
  EXPECT_EQ(parse_model("unbalanced:layers=6,hidden=8"), build_unbalanced(6, 8));
  const Model t = parse_model("transformer:layers=2,hidden=64,heads=4,seq=32,vocab=100");
  EXPECT_EQ(t, build_transformer({.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 100}));
  EXPECT_EQ(t.layers.size(), 4u);
}

TEST(ModelSpec, VocabDefaultsTo256) {
  const Model t = parse_model("transformer:layers=1,hidden=8,heads=2,seq=4");
  EXPECT_EQ(t.vocab, 256);
  EXPECT_EQ(t.layers.front().params, 256 * 8 + 4 * 8);
  EXPECT_EQ(t.spec, "transformer:layers=1,hidden=8,heads=2,seq=4");
}

TEST(ModelSpec, SpecIsCanonical) {
  EXPECT_EQ(parse_model("mlp:hidden=16,layers=3").spec, "mlp:layers=3,hidden=16");
  EXPECT_EQ(parse_model("transformer:vocab=256,seq=4,heads=2,hidden=8,layers=1").spec,
            "transformer:layers=1,hidden=8,heads=2,seq=4");
  EXPECT_EQ(parse_model("transformer:seq=4,heads=2,hidden=8,layers=1,vocab=7").spec,
            "transformer:layers=1,hidden=8,heads=2,seq=4,vocab=7");
  for (const char* spec : {"mlp:layers=1,hidden=1", "unbalanced:layers=12,hidden=32",
                           "transformer:layers=24,hidden=1024,heads=16,seq=1024"}) {
    const Model m = parse_model(spec);
    EXPECT_EQ(m.spec, spec);
    EXPECT_EQ(parse_model(m.spec), m);
  }
}

TEST(ModelSpec, AcceptsTheLargestValue) {
  const Model m = parse_model("mlp:layers=1,hidden=1048576");
  EXPECT_EQ(m.hidden, kMaxSpecValue);
}

TEST(ModelSpecErrors, UnknownFamilyListsTheKnownOnes) {
  expect_error("resnet:layers=2",
               {"unknown family or preset 'resnet'", "mlp, transformer, unbalanced, llama, dit",
                "presets: llama3-8b"});
  expect_error("", {"unknown family or preset ''"});
  expect_error("MLP:layers=2,hidden=4", {"unknown family or preset 'MLP'"});
  EXPECT_EQ(model_families(), "mlp, transformer, unbalanced, llama, dit");
}

TEST(ModelSpecErrors, UnknownKeyListsTheFamilysKeys) {
  expect_error("mlp:layers=2,hidden=4,heads=2",
               {"unknown key 'heads'", "family 'mlp'", "layers, hidden"});
  expect_error("transformer:layers=1,hidden=8,heads=2,seq=4,depth=3",
               {"unknown key 'depth'", "layers, hidden, heads, seq, vocab"});
}

TEST(ModelSpecErrors, MissingRequiredKey) {
  expect_error("mlp:layers=2", {"missing required key 'hidden'"});
  expect_error("mlp", {"missing required key 'layers'"});
  expect_error("mlp:", {"missing required key 'layers'"});
  expect_error("transformer:layers=1,hidden=8,heads=2", {"missing required key 'seq'"});
  expect_error("unbalanced:hidden=8", {"missing required key 'layers'"});
}

TEST(ModelSpecErrors, ValueNotAnInteger) {
  for (const char* value : {"two", "2.5", "", " 2", "2 ", "+2", "2x", "0x10", "1e3"}) {
    expect_error(std::string("mlp:layers=") + value + ",hidden=4",
                 {"key 'layers' must be an integer from 1 to 16384",
                  "got '" + std::string(value) + "'"});
  }
}

TEST(ModelSpecErrors, ValueOutOfRange) {
  expect_error("mlp:layers=0,hidden=4", {"key 'layers'", "got '0'"});
  // Layers stop lower than other keys: the partitioner's work grows with their square.
  expect_error("mlp:layers=16385,hidden=4", {"key 'layers' must be an integer from 1 to 16384", "got '16385'"});
  expect_error("mlp:layers=1048576,hidden=8", {"key 'layers' must be an integer from 1 to 16384"});
  expect_error("mlp:layers=2,hidden=-4", {"key 'hidden'", "got '-4'"});
  expect_error("unbalanced:layers=2,hidden=1048577", {"key 'hidden'", "got '1048577'"});
  expect_error("transformer:layers=1,hidden=8,heads=2,seq=4,vocab=99999999999999999999",
               {"key 'vocab'"});
  expect_error("transformer:layers=1,hidden=8,heads=0,seq=4", {"key 'heads'", "got '0'"});
}

TEST(ModelSpecErrors, HiddenNotDivisibleByHeads) {
  expect_error("transformer:layers=1,hidden=10,heads=3,seq=4",
               {"hidden=10 is not divisible by heads=3"});
}

TEST(ModelSpecErrors, DuplicatedKey) {
  expect_error("mlp:layers=2,hidden=4,layers=3", {"duplicated key 'layers'"});
  expect_error("transformer:layers=1,hidden=8,heads=2,seq=4,vocab=9,vocab=9",
               {"duplicated key 'vocab'"});
}

TEST(ModelSpecErrors, EntryNotKeyValue) {
  expect_error("mlp:layers", {"entry 'layers' is not key=value"});
  expect_error("mlp:=3,hidden=4", {"entry '=3' is not key=value"});
  expect_error("mlp:layers=2,,hidden=4", {"entry '' is not key=value"});
  expect_error("mlp:layers=2,hidden=4,", {"trailing ','"});
}

}  // namespace
}  // namespace gpipe::models
