// The JSON field reader every schedule, profile and trace reader uses
// (base/json_fields.hpp): what each getter accepts, and the whole line of
// each error in both wordings, with the field's path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "tests/error_of.hpp"

namespace gpipe {
namespace {

using nlohmann::json;
using testing::error_of;

constexpr JsonWording kLabel{};
constexpr JsonWording kField{.form = JsonWording::Form::quoted, .field_word = "field "};
constexpr JsonWording kQuoted{.form = JsonWording::Form::quoted};

const json kDoc = json::parse(R"({
  "name": "gpt", "empty": "", "flag": true, "n": 3, "x": 2.5, "neg": -1.5, "zero": 0,
  "big": 9223372036854775808, "none": null,
  "layers": [{"samples": [{"fwd_us": -1}, {"fwd_us": 2}]}, {"samples": []}],
  "grid": [[1, 2], [3, "four"]]
})");

TEST(JsonFields, GettersReadWhatTheyName) {
  const JsonField doc(kDoc, "p.json", kLabel);
  EXPECT_EQ(doc.member("name").string(), "gpt");
  EXPECT_EQ(&doc.member("name").string(), &kDoc["name"].get_ref<const std::string&>());  // no copy
  EXPECT_EQ(doc.member("name").non_empty_string(), "gpt");
  EXPECT_TRUE(doc.member("flag").boolean());
  EXPECT_EQ(doc.member("n").integer(), 3);
  EXPECT_EQ(doc.member("n").integer(3, 3), 3);
  EXPECT_EQ(doc.member("n").integer(1, 5, "a small integer"), 3);
  EXPECT_EQ(doc.member("n").number(), 3.0);
  EXPECT_EQ(doc.member("x").number(), 2.5);
  EXPECT_EQ(doc.member("zero").non_negative_number(), 0.0);
  EXPECT_EQ(doc.member("x").positive_number(), 2.5);
  EXPECT_EQ(doc.member("layers").array_size(), 2U);
  EXPECT_EQ(doc.member("layers").non_empty_array_size(), 2U);
  EXPECT_EQ(doc.member("layers").element(1).member("samples").array_size(), 0U);
  EXPECT_FALSE(doc.optional_member("absent").has_value());
  EXPECT_EQ(doc.optional_member("n")->integer(), 3);
  EXPECT_EQ(&doc.member("grid").element(1).value(), &kDoc["grid"][1]);
}

TEST(JsonFields, LabelledErrorsNameOriginPathAndWhatWasExpected) {
  const JsonField doc(kDoc, "p.json", kLabel);
  EXPECT_EQ(error_of([&] { (void)doc.member("absent"); }), "p.json: absent: is missing");
  EXPECT_EQ(error_of([&] { (void)doc.member("layers").element(0).member("absent"); }),
            "p.json: layers[0].absent: is missing");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").string(); }), "p.json: n: expected a string");
  EXPECT_EQ(error_of([&] { (void)doc.member("empty").non_empty_string(); }), "p.json: empty: expected a non-empty string");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").non_empty_string(); }), "p.json: n: expected a string");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").boolean(); }), "p.json: n: expected true or false");
  EXPECT_EQ(error_of([&] { (void)doc.member("flag").number(); }), "p.json: flag: expected a number");
  EXPECT_EQ(error_of([&] { (void)doc.member("neg").non_negative_number(); }),
            "p.json: neg: expected a non-negative number");
  EXPECT_EQ(error_of([&] { (void)doc.member("zero").positive_number(); }), "p.json: zero: expected a positive number");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").array_size(); }), "p.json: n: expected an array");
  EXPECT_EQ(error_of([&] { (void)doc.member("layers").element(1).member("samples").non_empty_array_size(); }),
            "p.json: layers[1].samples: expected a non-empty array");
  EXPECT_EQ(error_of([&] { doc.member("n").expect_object(); }), "p.json: n: expected an object");
  EXPECT_EQ(error_of([&] { (void)doc.member("layers").element(0).member("samples").element(0).member("fwd_us")
                                 .non_negative_number(); }),
            "p.json: layers[0].samples[0].fwd_us: expected a non-negative number");
  EXPECT_EQ(error_of([&] { (void)doc.member("grid").element(1).element(1).integer(); }),
            "p.json: grid[1][1]: expected an integer");
}

TEST(JsonFields, IntegersAreJsonIntegersWithinTheirRange) {
  const JsonField doc(kDoc, "p.json", kLabel);
  EXPECT_EQ(error_of([&] { (void)doc.member("x").integer(); }), "p.json: x: expected an integer");
  EXPECT_EQ(error_of([&] { (void)doc.member("flag").integer(); }), "p.json: flag: expected an integer");
  EXPECT_EQ(error_of([&] { (void)doc.member("big").integer(); }), "p.json: big: is out of range");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").integer(4, 9); }), "p.json: n: expected in [4, 9]");
  EXPECT_EQ(error_of([&] { (void)doc.member("x").integer(4, 9); }), "p.json: x: expected an integer");
  EXPECT_EQ(error_of([&] { (void)doc.member("big").integer(0, std::numeric_limits<std::int64_t>::max()); }),
            "p.json: big: expected in [0, 9223372036854775807]");
  // One description for a wrong kind and a value out of range alike.
  EXPECT_EQ(error_of([&] { (void)doc.member("n").integer(4, 9, "a small integer"); }),
            "p.json: n: expected a small integer");
  EXPECT_EQ(error_of([&] { (void)doc.member("x").integer(4, 9, "a small integer"); }),
            "p.json: x: expected a small integer");
  EXPECT_EQ(error_of([&] { (void)doc.member("big").integer(0, 9, "a small integer"); }),
            "p.json: big: expected a small integer");
}

TEST(JsonFields, TheDocumentItselfIsNamedByItsOrigin) {
  const json array = json::array({1});
  EXPECT_EQ(error_of([&] { JsonField(array, "p.json", kLabel).expect_object(); }), "p.json: expected a JSON object");
  EXPECT_EQ(error_of([&] { JsonField(array, "metrics", kField).expect_object(); }), "metrics: must be a JSON object");
  // Members exist in objects only.
  EXPECT_EQ(error_of([&] { (void)JsonField(array, "p.json", kLabel).member("a"); }), "p.json: expected a JSON object");
  EXPECT_EQ(error_of([&] { (void)JsonField(kDoc, "p.json", kLabel).member("n").optional_member("a"); }),
            "p.json: n: expected an object");
  EXPECT_EQ(error_of([&] { JsonField(array, "t.json", kField).fail("not a Chrome trace object"); }),
            "t.json: not a Chrome trace object");
}

TEST(JsonFields, QuotedErrorsMakeTheFieldTheSubject) {
  const JsonField doc(kDoc, "t.json", kField);
  EXPECT_EQ(error_of([&] { (void)doc.member("absent"); }), "t.json: field 'absent' is missing");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").string(); }), "t.json: field 'n' must be a string");
  EXPECT_EQ(error_of([&] { (void)doc.member("n").integer(0, 1); }), "t.json: field 'n' must be in [0, 1]");
  EXPECT_EQ(error_of([&] { (void)doc.member("grid").element(0).member("a"); }),
            "t.json: field 'grid[0]' must be an object");
  EXPECT_EQ(error_of([&] { doc.member("layers").element(0).fail_member("ts", "must be a number"); }),
            "t.json: field 'layers[0].ts' must be a number");
  const JsonField bare(kDoc, "k.json", kQuoted);
  EXPECT_EQ(error_of([&] { (void)bare.member("n").integer(5, 6, "a non-negative integer"); }),
            "k.json: 'n' must be a non-negative integer");
}

TEST(JsonFields, ARecordIsNamedBeforeTheFieldWithinIt) {
  const JsonField doc(kDoc, "k.json", kQuoted);
  const JsonField sample = doc.member("layers").element(0).member("samples").element(1).record();
  EXPECT_EQ(error_of([&] { (void)sample.member("dur"); }), "k.json: layers[0].samples[1]: 'dur' is missing");
  EXPECT_EQ(error_of([&] { (void)sample.member("fwd_us").string(); }),
            "k.json: layers[0].samples[1]: 'fwd_us' must be a string");
  EXPECT_EQ(error_of([&] { (void)sample.member("fwd_us").array_size(); }),
            "k.json: layers[0].samples[1]: 'fwd_us' must be an array");
  EXPECT_EQ(error_of([&] { (void)doc.member("grid").element(1).record().member("a"); }),
            "k.json: grid[1] must be an object");
  const JsonField labelled = JsonField(kDoc, "p.json", kLabel).member("grid").element(1).record();
  EXPECT_EQ(error_of([&] { (void)labelled.element(1).integer(); }), "p.json: grid[1]: [1]: expected an integer");
  EXPECT_EQ(error_of([&] { labelled.fail("bad row"); }), "p.json: grid[1]: bad row");
}

TEST(JsonFields, AFormatMayNameAnAbsentMemberItsOwnWay) {
  constexpr JsonWording kSchedule{.missing = "missing"};
  const JsonField doc(kDoc, "s.json", kSchedule);
  EXPECT_EQ(error_of([&] { (void)doc.member("ranks"); }), "s.json: ranks: missing");
  EXPECT_EQ(error_of([&] { doc.fail_member("n", "5 stages in a file of 4 actions"); }),
            "s.json: n: 5 stages in a file of 4 actions");
}

TEST(JsonFields, NumbersBuiltInMemoryMayNotBeFinite) {
  const json doc = {{"nan", std::nan("")}, {"inf", std::numeric_limits<double>::infinity()}};
  const JsonField at(doc, "m", kLabel);
  EXPECT_TRUE(std::isnan(at.member("nan").number()));
  EXPECT_EQ(error_of([&] { (void)at.member("nan").non_negative_number(); }), "m: nan: expected a non-negative number");
  EXPECT_EQ(error_of([&] { (void)at.member("inf").positive_number(); }), "m: inf: expected a positive number");
}

TEST(JsonFields, ThePathIsOfTheValueNotOfAnEqualOne) {
  // The error's path is found by where the value is: equal values elsewhere are not it.
  const json doc = json::parse(R"({"a": [{"v": 1}, {"v": 1}], "b": {"v": 1}})");
  const JsonField root(doc, "e.json", kLabel);
  EXPECT_EQ(error_of([&] { root.member("a").element(1).member("v").fail("no"); }), "e.json: a[1].v: no");
  EXPECT_EQ(error_of([&] { root.member("b").member("v").fail("no"); }), "e.json: b.v: no");
  EXPECT_EQ(error_of([&] { root.member("b").fail_member("w", "no"); }), "e.json: b.w: no");
}

TEST(JsonFields, ADeeplyNestedValueIsNamedWithoutRecursion) {
  constexpr int kDepth = 200'000;
  const json doc = json::parse(std::string(kDepth, '[') + "true" + std::string(kDepth, ']'));
  JsonField at(doc, "deep.json", kLabel);
  for (int i = 0; i < kDepth; ++i) at = at.element(0);
  std::string path;
  for (int i = 0; i < kDepth; ++i) path += "[0]";
  EXPECT_EQ(error_of([&] { (void)at.integer(); }), "deep.json: " + path + ": expected an integer");
}

TEST(JsonFields, AnElementPastTheEndIsABug) {
  const JsonField doc(kDoc, "p.json", kLabel);
  EXPECT_THROW((void)doc.member("grid").element(2), InternalError);
  EXPECT_THROW((void)doc.member("n").element(0), InternalError);
}

}  // namespace
}  // namespace gpipe
