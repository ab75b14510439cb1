#include "models/model_spec.hpp"

#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/families.hpp"
#include "models/presets.hpp"

namespace gpipe::models {
namespace {

// A key's value is an integer in [1, most] (layers: up to kMaxModelLayers),
// one of attn's names, held as its Attention's integer, or a flag, 0 or 1.
// recompute's module names are held as their bits (models/recompute_modules.hpp),
// a probability (dropout) as thousandths: 0 to 0.999, at most three decimals.
enum class ValueKind { integer, attention, flag, modules, probability };

constexpr int kThousandths = 1000;

struct Key {
  std::string_view name;
  std::optional<int> default_value;  // nullopt: required, unless default_key
  std::string_view default_key = {};  // the key whose value it defaults to (kv_heads: heads)
  ValueKind kind = ValueKind::integer;
};

struct Family {
  std::string_view name;
  std::vector<Key> keys;  // in canonical order
};

constexpr int kNaive = static_cast<int>(Attention::naive);
constexpr int kFlash = static_cast<int>(Attention::flash);

std::vector<Family> families() {
  return {
      {"mlp", {{"layers", {}}, {"hidden", {}}}},
      {"transformer",
       {{"layers", {}}, {"hidden", {}}, {"heads", {}}, {"seq", {}}, {"vocab", kDefaultVocab},
        {"attn", kNaive, {}, ValueKind::attention}, {"recompute", 0, {}, ValueKind::modules},
        {"dropout", 0, {}, ValueKind::probability}}},
      {"unbalanced", {{"layers", {}}, {"hidden", {}}}},
      {"llama",
       {{"layers", {}}, {"hidden", {}}, {"heads", {}}, {"kv_heads", {}, "heads"}, {"ffn", {}},
        {"seq", {}}, {"vocab", {}}, {"attn", kFlash, {}, ValueKind::attention},
        {"rope_theta", kDefaultRopeTheta}, {"tied", 0, {}, ValueKind::flag},
        {"recompute", 0, {}, ValueKind::modules}}},
      {"dit",
       {{"layers", {}}, {"hidden", {}}, {"heads", {}}, {"tokens", {}}, {"patch", 2},
        {"channels", 4}, {"classes", 1000}, {"attn", kFlash, {}, ValueKind::attention},
        {"cache", 0, {}, ValueKind::flag}}},
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
    const std::string_view body = colon == std::string_view::npos ? "" : spec_.substr(colon + 1);
    Values values;
    Family family;
    if (const Preset* preset = find_preset(name)) {
      // The preset's own spec first, then the user's overrides over it.
      const std::string_view base = preset->spec;
      family = find_family(base.substr(0, base.find(':')));
      values = read_values(family, base.substr(base.find(':') + 1));
      for (auto& [key, value] : read_values(family, body)) values[key] = value;
    } else {
      family = find_family(name);
      values = read_values(family, body);
    }
    fill_defaults(family, values);
    return build(family, values);
  }

 private:
  [[nodiscard]] InputError fail(std::string_view why) const {
    return InputError(fmt::format("model spec '{}': {}", spec_, why));
  }

  Family find_family(std::string_view name) const {
    for (Family& family : families()) {
      if (family.name == name) return family;
    }
    throw fail(fmt::format("unknown family or preset '{}' (families: {}; presets: {})", name,
                           model_families(), preset_names()));
  }

  Model build(const Family& family, const Values& v) const {
    const auto attention = [&] { return static_cast<Attention>(v.at("attn")); };
    if (family.name == "mlp") return build_mlp(v.at("layers"), v.at("hidden"));
    if (family.name == "unbalanced") return build_unbalanced(v.at("layers"), v.at("hidden"));
    check_heads(v.at("hidden"), v.at("heads"));
    if (family.name == "transformer") {
      return build_transformer({.layers = v.at("layers"), .hidden = v.at("hidden"),
                                .heads = v.at("heads"), .seq = v.at("seq"),
                                .vocab = v.at("vocab"), .attention = attention(),
                                .recompute = from_bits(v.at("recompute")),
                                .dropout = v.at("dropout") / static_cast<double>(kThousandths)});
    }
    if (family.name == "llama") {
      const int heads = v.at("heads");
      const int kv_heads = v.at("kv_heads");
      if (heads % kv_heads != 0) {
        throw fail(fmt::format("heads={} is not divisible by kv_heads={}", heads, kv_heads));
      }
      if ((v.at("hidden") / heads) % 2 != 0) {
        throw fail(fmt::format("head width hidden/heads = {} is odd; the rotary embedding "
                               "rotates pairs", v.at("hidden") / heads));
      }
      return build_llama({.layers = v.at("layers"), .hidden = v.at("hidden"), .heads = heads,
                          .kv_heads = kv_heads, .ffn = v.at("ffn"), .seq = v.at("seq"),
                          .vocab = v.at("vocab"), .attention = attention(),
                          .rope_theta = v.at("rope_theta"), .tied = v.at("tied") == 1,
                          .recompute = from_bits(v.at("recompute"))});
    }
    return build_dit({.layers = v.at("layers"), .hidden = v.at("hidden"), .heads = v.at("heads"),
                      .tokens = v.at("tokens"), .patch = v.at("patch"),
                      .channels = v.at("channels"), .classes = v.at("classes"),
                      .attention = attention(), .cache = v.at("cache") == 1});
  }

  void check_heads(int hidden, int heads) const {
    if (hidden % heads != 0) {
      throw fail(fmt::format("hidden={} is not divisible by heads={}", hidden, heads));
    }
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
      const Key* known = nullptr;
      for (const Key& k : family.keys) {
        if (k.name == key) known = &k;
      }
      if (known == nullptr) {
        throw fail(fmt::format("unknown key '{}' for family '{}' (keys: {})", key, family.name,
                               key_names(family)));
      }
      if (values.contains(key)) throw fail(fmt::format("duplicated key '{}'", key));
      values.emplace(std::string(key), read_value(*known, entry.substr(equals + 1)));
    }
    return values;
  }

  void fill_defaults(const Family& family, Values& values) const {
    for (const Key& key : family.keys) {
      if (values.contains(key.name)) continue;
      if (!key.default_key.empty() && values.contains(key.default_key)) {
        values.emplace(std::string(key.name), values.at(std::string(key.default_key)));
      } else if (key.default_value) {
        values.emplace(std::string(key.name), *key.default_value);
      } else {
        throw fail(fmt::format("missing required key '{}'", key.name));
      }
    }
  }

  int read_value(const Key& key, std::string_view text) const {
    if (key.kind == ValueKind::attention) {
      if (text == "flash") return kFlash;
      if (text == "naive") return kNaive;
      throw fail(fmt::format("key '{}' must be flash or naive, got '{}'", key.name, text));
    }
    if (key.kind == ValueKind::modules) {
      if (const auto modules = parse_recompute_modules(text)) return to_bits(*modules);
      throw fail(fmt::format("key '{}' must be modules joined by '+', each once ({}), got '{}'", key.name,
                             recompute_module_names(), text));
    }
    if (key.kind == ValueKind::probability) {
      if (const auto thousandths = read_thousandths(text)) return *thousandths;
      throw fail(fmt::format("key '{}' must be a probability from 0 to 0.999, at most three decimals, got '{}'",
                             key.name, text));
    }
    if (key.kind == ValueKind::flag) {
      if (text == "0" || text == "1") return text == "1" ? 1 : 0;
      throw fail(fmt::format("key '{}' must be 0 or 1, got '{}'", key.name, text));
    }
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool integer = !text.empty() && text.front() != '+' && end == text.data() + text.size();
    // Layers bound the partitioner's work (about quadratic in them) and every per-layer table.
    const long long most = key.name == "layers" ? kMaxModelLayers : kMaxSpecValue;
    if (ec != std::errc{} || !integer || value < 1 || value > most) {
      throw fail(fmt::format("key '{}' must be an integer from 1 to {}, got '{}'", key.name, most,
                             text));
    }
    return static_cast<int>(value);
  }

  // "0.1" -> 100, "0" -> 0, "0.125" -> 125; nullopt for anything else
  // (a sign, an exponent, 1 or more, a fourth decimal).
  static std::optional<int> read_thousandths(std::string_view text) {
    if (text == "0") return 0;
    if (text.size() < 3 || text.size() > 5 || text.substr(0, 2) != "0.") return std::nullopt;
    int value = 0;
    int scale = kThousandths;
    for (const char c : text.substr(2)) {
      if (c < '0' || c > '9') return std::nullopt;
      scale /= 10;
      value += (c - '0') * scale;
    }
    return value;
  }

  std::string_view spec_;
};

}  // namespace

Model parse_model(std::string_view spec) { return SpecParser(spec).parse(); }

Model with_recompute_modules(const Model& model, const RecomputeModules& modules) {
  if (model.recompute_modules == modules) return model;
  // The canonical spec holds recompute= as its own entry, if at all.
  std::string spec = model.spec;
  if (const std::size_t at = spec.find(",recompute="); at != std::string::npos) {
    const std::size_t end = spec.find(',', at + 1);
    spec.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  if (modules.any()) spec += fmt::format("{}recompute={}", spec.find(':') == std::string::npos ? ":" : ",",
                                         to_string(modules));
  return parse_model(spec);
}

std::string model_spec_help() {
  return "Model SPEC: mlp:layers=L,hidden=H; unbalanced:layers=L,hidden=H; "
         "transformer:layers=L,hidden=H,heads=A,seq=S[,vocab=V][,attn=naive|flash][,recompute=M]"
         "[,dropout=p]; "
         "llama:layers=L,hidden=H,heads=A[,kv_heads=G],ffn=F,seq=S,vocab=V[,attn=flash|naive]"
         "[,rope_theta=R][,tied=0|1][,recompute=M]; M: modules the blocks run again in the backward, "
         "core_attn+mlp+layernorm or some of them; p: dropout's probability, 0 to 0.999; dit:layers=L,hidden=H,heads=A,tokens=T[,patch=P,channels=C,classes=N][,cache=0|1]"
         "[,attn=flash|naive]; or a preset (" +
         preset_names() + "), overridden as llama3-8b:seq=4096";
}

std::string_view model_families() { return "mlp, transformer, unbalanced, llama, dit"; }

}  // namespace gpipe::models
