// Reading the fields of a JSON document: a value with the file it came from,
// whose typed getters throw InputError naming the file and the field's path
// ("ORIGIN: layers[3].samples[0].fwd_us: expected a non-negative number").
// Every reader of a schedule, profile or trace goes through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gpipe {

// How one format words its errors, part of its contract (tests and scripts
// match them). Each names the origin, then the field, then what is wrong:
//   label:  "ORIGIN: PATH: expected a string"
//   quoted: "ORIGIN: field 'PATH' must be a string"
// and the document itself by the origin alone ("ORIGIN: expected a JSON object").
struct JsonWording {
  enum class Form { label, quoted };
  Form form = Form::label;
  // Written before a quoted path: "field " gives "field 'PATH'".
  std::string_view field_word;
  // What an absent required member is: "PATH: is missing".
  std::string_view missing = "is missing";
};

// A value of a document and its place in it. Fields are small and carry no
// path: the path is found when an error is thrown, by searching the document
// for the value, so reading a large file builds no strings for the fields
// that are fine.
class JsonField {
 public:
  // The document itself, read from `origin` (a file name). The document
  // (unchanged), the origin's text and the wording must outlive every field
  // read from it.
  JsonField(const nlohmann::json& document, std::string_view origin, const JsonWording& wording);

  // The value, for checks the getters do not make.
  [[nodiscard]] const nlohmann::json& value() const { return *value_; }

  // Members exist in objects only: on any other value these fail as
  // expect_object() does. member() fails "PATH.KEY: is missing" (or the
  // wording's word) when there is none.
  [[nodiscard]] JsonField member(std::string_view key) const;
  [[nodiscard]] std::optional<JsonField> optional_member(std::string_view key) const;
  // Element `index` of an array; any other call is a bug (InternalError).
  [[nodiscard]] JsonField element(std::size_t index) const;
  // This value as one record of a long list, whose errors name the record and
  // then the field within it: "ORIGIN: traceEvents[3]: 'ts' must be a number",
  // and "ORIGIN: traceEvents[3] must be an object" for the record itself.
  [[nodiscard]] JsonField record() const;

  // Each getter fails "expected X" (label) or "must be X" (quoted).
  // An object: X is "an object", or "a JSON object" for the document itself.
  void expect_object() const;
  // The size of an array: X is "an array", or "a non-empty array".
  [[nodiscard]] std::size_t array_size() const;
  [[nodiscard]] std::size_t non_empty_array_size() const;
  // A string, referring into the document: X is "a string", then "a non-empty string".
  [[nodiscard]] const std::string& string() const;
  [[nodiscard]] const std::string& non_empty_string() const;
  // true or false (not 0 or 1): X is "true or false".
  [[nodiscard]] bool boolean() const;
  // Any number (not a boolean): X is "a number". Text holds only finite
  // numbers; a document built in memory may hold others, which the two
  // getters below refuse.
  [[nodiscard]] double number() const;
  // A finite number at least 0, or above 0: X is "a non-negative number", "a positive number".
  [[nodiscard]] double non_negative_number() const;
  [[nodiscard]] double positive_number() const;
  // A JSON integer (not 2.0) that fits 64 bits: X is "an integer", and one
  // past 2^63 - 1 "is out of range".
  [[nodiscard]] std::int64_t integer() const;
  // One from min to max: X is "an integer", then "in [MIN, MAX]".
  [[nodiscard]] std::int64_t integer(std::int64_t min, std::int64_t max) const;
  // The same, with one X for both: "a positive integer", "an integer from 1 to 1000000".
  [[nodiscard]] std::int64_t integer(std::int64_t min, std::int64_t max, std::string_view what) const;

  // Throws InputError naming this field, or its member `key` (present or
  // not), and saying `why`: "ORIGIN: PATH: why" or "ORIGIN: field 'PATH' why".
  [[noreturn]] void fail(std::string_view why) const;
  [[noreturn]] void fail_member(std::string_view key, std::string_view why) const;

 private:
  JsonField(const JsonField& parent, const nlohmann::json& value);
  [[noreturn]] void fail_expecting(std::string_view what) const;
  [[noreturn]] void throw_at(std::string_view key, std::string_view why) const;

  const nlohmann::json* value_;
  const nlohmann::json* document_;
  const nlohmann::json* record_ = nullptr;  // the record this value is in, if any
  std::string_view origin_;
  const JsonWording* wording_;
};

}  // namespace gpipe
