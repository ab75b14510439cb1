#include "models/model_spec.hpp"

#include <array>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/families.hpp"
#include "schedules/error.hpp"

namespace gpipe::models {
namespace {

struct Key {
  std::string_view name;
  std::optional<int> default_value;  // nullopt: required
};

struct Family {
  std::string_view name;
  std::vector<Key> keys;  // in canonical order
};

std::vector<Family> families() {
  return {
      {"mlp", {{"layers", {}}, {"hidden", {}}}},
      {"transformer",
       {{"layers", {}}, {"hidden", {}}, {"heads", {}}, {"seq", {}}, {"vocab", kDefaultVocab}}},
      {"unbalanced", {{"layers", {}}, {"hidden", {}}}},
  };
}

std::string key_names(const Family& family) {
  std::string names;
  for (const Key& key : family.keys) {
    if (!names.empty()) names += ", ";
    names += key.name;
  }
  return names;
}

using Values = std::map<std::string, int, std::less<>>;

class SpecParser {
 public:
  explicit SpecParser(std::string_view spec) : spec_(spec) {}

  Model parse() {
    const std::size_t colon = spec_.find(':');
    const std::string_view name = spec_.substr(0, colon);
    const Family family = find_family(name);
    const Values values =
        read_values(family, colon == std::string_view::npos ? "" : spec_.substr(colon + 1));
    if (family.name == "mlp") return build_mlp(values.at("layers"), values.at("hidden"));
    if (family.name == "unbalanced") {
      return build_unbalanced(values.at("layers"), values.at("hidden"));
    }
    const TransformerShape shape{.layers = values.at("layers"),
                                 .hidden = values.at("hidden"),
                                 .heads = values.at("heads"),
                                 .seq = values.at("seq"),
                                 .vocab = values.at("vocab")};
    if (shape.hidden % shape.heads != 0) {
      throw fail(fmt::format("hidden={} is not divisible by heads={}", shape.hidden, shape.heads));
    }
    return build_transformer(shape);
  }

 private:
  [[nodiscard]] InputError fail(std::string_view why) const {
    return InputError(fmt::format("model spec '{}': {}", spec_, why));
  }

  Family find_family(std::string_view name) const {
    for (Family& family : families()) {
      if (family.name == name) return family;
    }
    throw fail(fmt::format("unknown family '{}' (known: {})", name, model_families()));
  }

  Values read_values(const Family& family, std::string_view body) const {
    Values values;
    while (!body.empty()) {
      const std::size_t comma = body.find(',');
      const std::string_view entry = body.substr(0, comma);
      body = comma == std::string_view::npos ? "" : body.substr(comma + 1);
      if (comma != std::string_view::npos && body.empty()) throw fail("trailing ','");
      const std::size_t equals = entry.find('=');
      if (equals == std::string_view::npos || equals == 0) {
        throw fail(fmt::format("entry '{}' is not key=value", entry));
      }
      const std::string_view key = entry.substr(0, equals);
      bool known = false;
      for (const Key& k : family.keys) known = known || k.name == key;
      if (!known) {
        throw fail(fmt::format("unknown key '{}' for family '{}' (keys: {})", key, family.name,
                               key_names(family)));
      }
      if (values.contains(key)) throw fail(fmt::format("duplicated key '{}'", key));
      values.emplace(std::string(key), read_value(key, entry.substr(equals + 1)));
    }
    for (const Key& key : family.keys) {
      if (values.contains(key.name)) continue;
      if (!key.default_value) throw fail(fmt::format("missing required key '{}'", key.name));
      values.emplace(std::string(key.name), *key.default_value);
    }
    return values;
  }

  int read_value(std::string_view key, std::string_view text) const {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool integer = !text.empty() && text.front() != '+' && end == text.data() + text.size();
    // Layers bound the partitioner's work (about quadratic in them) and every per-layer table.
    const long long most = key == "layers" ? kMaxModelLayers : kMaxSpecValue;
    if (ec != std::errc{} || !integer || value < 1 || value > most) {
      throw fail(fmt::format("key '{}' must be an integer from 1 to {}, got '{}'", key, most, text));
    }
    return static_cast<int>(value);
  }

  std::string_view spec_;
};

}  // namespace

Model parse_model(std::string_view spec) { return SpecParser(spec).parse(); }

std::string_view model_families() { return "mlp, transformer, unbalanced"; }

}  // namespace gpipe::models
