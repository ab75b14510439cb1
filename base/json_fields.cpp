#include "base/json_fields.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace gpipe {
namespace {

using nlohmann::json;

// The path from `from` down to `target` ("layers[3].samples[0]"), empty when
// they are one. Fields carry no path, so that the files that are fine cost
// nothing; an error, once, searches the document for its value. The search
// keeps its own stack: a document may nest deeper than the call stack could.
std::string path_between(const json& from, const json* target) {
  struct Frame {
    const json* node;
    json::const_iterator child;  // the child being looked at
    std::size_t index = 0;       // its index, for an array
    void next() {
      ++child;
      ++index;
    }
  };
  std::vector<Frame> stack;
  if (&from != target && from.is_structured()) stack.push_back({&from, from.cbegin()});
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.child == frame.node->cend()) {
      stack.pop_back();
      if (!stack.empty()) stack.back().next();
    } else if (&*frame.child == target) {
      break;
    } else if (frame.child->is_structured() && !frame.child->empty()) {
      stack.push_back({&*frame.child, frame.child->cbegin()});
    } else {
      frame.next();
    }
  }
  // The stack holds the steps from `from` to `target`, or none: found nowhere.
  std::string path;
  for (const Frame& frame : stack) {
    if (frame.node->is_object()) {
      if (!path.empty()) path += '.';
      path += frame.child.key();
    } else {
      path += fmt::format("[{}]", frame.index);
    }
  }
  return path;
}

}  // namespace

JsonField::JsonField(const json& document, std::string_view origin, const JsonWording& wording)
    : value_(&document), document_(&document), origin_(origin), wording_(&wording) {}

JsonField::JsonField(const JsonField& parent, const json& value) : JsonField(parent) { value_ = &value; }

JsonField JsonField::member(std::string_view key) const {
  expect_object();
  const auto found = value_->find(key);
  if (found == value_->end()) fail_member(key, wording_->missing);
  return JsonField(*this, *found);
}

std::optional<JsonField> JsonField::optional_member(std::string_view key) const {
  expect_object();
  const auto found = value_->find(key);
  if (found == value_->end()) return std::nullopt;
  return JsonField(*this, *found);
}

JsonField JsonField::element(std::size_t index) const {
  if (!value_->is_array() || index >= value_->size()) {
    throw InternalError(fmt::format("JsonField::element({}) of a {} of {} values", index, value_->type_name(),
                                    value_->size()));
  }
  return JsonField(*this, (*value_)[index]);
}

JsonField JsonField::record() const {
  JsonField out = *this;
  out.record_ = value_;
  return out;
}

void JsonField::expect_object() const {
  if (value_->is_object()) return;
  fail_expecting(value_ == document_ && record_ == nullptr ? "a JSON object" : "an object");
}

std::size_t JsonField::array_size() const {
  if (!value_->is_array()) fail_expecting("an array");
  return value_->size();
}

std::size_t JsonField::non_empty_array_size() const {
  if (!value_->is_array() || value_->empty()) fail_expecting("a non-empty array");
  return value_->size();
}

const std::string& JsonField::string() const {
  if (!value_->is_string()) fail_expecting("a string");
  return value_->get_ref<const std::string&>();
}

const std::string& JsonField::non_empty_string() const {
  const std::string& text = string();
  if (text.empty()) fail_expecting("a non-empty string");
  return text;
}

bool JsonField::boolean() const {
  if (!value_->is_boolean()) fail_expecting("true or false");
  return value_->get<bool>();
}

double JsonField::number() const {
  // is_number() is false for booleans, so `true` is not read as 1.
  if (!value_->is_number()) fail_expecting("a number");
  return value_->get<double>();
}

double JsonField::non_negative_number() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() < 0) {
    fail_expecting("a non-negative number");
  }
  return value_->get<double>();
}

double JsonField::positive_number() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() <= 0) {
    fail_expecting("a positive number");
  }
  return value_->get<double>();
}

namespace {

// The value as a 64-bit integer, if it is a JSON integer that fits: an
// unsigned one past 2^63 - 1 does not.
std::optional<std::int64_t> as_int64(const json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return value.get<std::int64_t>();
}

}  // namespace

std::int64_t JsonField::integer() const {
  if (!value_->is_number_integer()) fail_expecting("an integer");
  const auto n = as_int64(*value_);
  if (!n) fail("is out of range");
  return *n;
}

std::int64_t JsonField::integer(std::int64_t min, std::int64_t max) const {
  if (!value_->is_number_integer()) fail_expecting("an integer");
  const auto n = as_int64(*value_);
  if (!n || *n < min || *n > max) fail_expecting(fmt::format("in [{}, {}]", min, max));
  return *n;
}

std::int64_t JsonField::integer(std::int64_t min, std::int64_t max, std::string_view what) const {
  const auto n = as_int64(*value_);
  if (!n || *n < min || *n > max) fail_expecting(what);
  return *n;
}

void JsonField::fail(std::string_view why) const { throw_at({}, why); }

void JsonField::fail_member(std::string_view key, std::string_view why) const { throw_at(key, why); }

void JsonField::fail_expecting(std::string_view what) const {
  const std::string_view verb = wording_->form == JsonWording::Form::label ? "expected" : "must be";
  fail(fmt::format("{} {}", verb, what));
}

void JsonField::throw_at(std::string_view key, std::string_view why) const {
  const std::string record = record_ == nullptr ? std::string() : path_between(*document_, record_);
  std::string path = path_between(record_ == nullptr ? *document_ : *record_, value_);
  if (!key.empty()) path = path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  std::string where;  // what comes between the origin and `why`, with its separators
  if (wording_->form == JsonWording::Form::label) {
    if (!record.empty()) where += record + ": ";
    if (!path.empty()) where += path + ": ";
  } else if (!path.empty()) {
    where = fmt::format("{}{}'{}' ", record.empty() ? "" : record + ": ", wording_->field_word, path);
  } else if (!record.empty()) {
    where = record + " ";
  }
  throw InputError(fmt::format("{}: {}{}", origin_, where, why));
}

}  // namespace gpipe
