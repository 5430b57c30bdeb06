#include "src/base/yaml_json.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace titan {
namespace {

using nlohmann::json;

TEST(YamlJsonTest, PlainScalarsReadAsTheirTypesQuotedOnesStayStrings) {
  auto docs = YamlToJson("a: 1\nb: '1'\nc: true\nd: ~\ne: 2.5\nf: 300s\ng: [x, \"y\"]\n", "t.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0], json::parse(R"({"a":1,"b":"1","c":true,"d":null,"e":2.5,"f":"300s",
                                        "g":["x","y"]})"));
}

TEST(YamlJsonTest, MultipleDocumentsAndEmptyOnesSkipped) {
  auto docs = YamlToJson("---\na: 1\n---\n---\nb: 2\n", "t.yaml");
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ(docs->size(), 2u);
}

TEST(YamlJsonTest, SyntaxErrorNamesFileAndLine) {
  auto docs = YamlToJson("a: 1\nb: [unclosed\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bad.yaml: not valid YAML at line"),
            std::string_view::npos)
      << docs.status().message();
}

TEST(YamlJsonTest, DeepNestingAndAliasBombsAreRefused) {
  std::string deep(500, '[');
  EXPECT_FALSE(YamlToJson(deep + std::string(500, ']'), "deep").ok());
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c, ++prev) {
    bomb += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, prev,
                        prev, prev, prev, prev, prev, prev, prev, prev, prev);
  }
  auto docs = YamlToJson(bomb, "bomb.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("YAML nodes"), std::string_view::npos);
}

TEST(YamlJsonTest, EmittedYamlReadsBackToTheSameJson) {
  json doc = json::parse(R"j({"s":"1","t":"yes","u":"on","v":"","w":"-x","n":3,"b":false,
    "z":null,"l":[{"k":"v"},"--nnodes","$(POD_NAME)"],"nested":{"nvidia.com/gpu":1}})j");
  std::string yaml = JsonToYaml({doc, json{{"second", 2}}});
  auto back = YamlToJson(yaml, "emitted");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0], doc) << yaml;
  EXPECT_EQ((*back)[1], (json{{"second", 2}}));
  EXPECT_NE(yaml.find("---\n"), std::string::npos);
}

// yaml-cpp keeps one of two equal keys silently; a sim scenario with `cluster:` twice ran with
// the second copy and no word (issue 15, #18).
TEST(YamlJsonTest, AKeyGivenTwiceInOneMappingIsRefusedWithItsLine) {
  auto docs = YamlToJson("cluster:\n  gpus: 8\njob: {}\ncluster:\n  gpus: 16\n", "s.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("s.yaml: line 4: key 'cluster' given twice"),
            std::string_view::npos)
      << docs.status().message();
  // The same key in different mappings is fine.
  EXPECT_TRUE(YamlToJson("a: {x: 1}\nb: {x: 2}\n", "s.yaml").ok());
}

// yaml-cpp 0.7's LoadAll loops forever on these (found by k8s_kubeconfig_fuzzer); each would
// hang this test without the first pass.
TEST(YamlJsonTest, StreamsOnWhichYamlCppNeverReturnsAreRefused) {
  for (const char* text : {",x", " ,x", "#c\n,x", "---\n,x", "a: 1\n---\n,x", "--- ,x",
                           "a: 1\n...\n,x", "\"a\", b", "'a', b", "[a], b", "\"a\"\n, b"}) {
    auto docs = YamlToJson(text, "h.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("h.yaml"), std::string_view::npos)
        << docs.status().message();
  }
  // Empty documents between markers are still fine.
  auto docs = YamlToJson("---\n---\na: 1\n...\n---\nb: 2\n", "ok.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ(docs->size(), 2u);
}

TEST(YamlJsonTest, LimitsAreTheCallers) {
  // Four levels: the document's map, a's, b's, and the scalar 1.
  EXPECT_FALSE(YamlToJson("a: {b: {c: 1}}\n", "t", YamlLimits{3, 100}).ok());
  EXPECT_TRUE(YamlToJson("a: {b: {c: 1}}\n", "t", YamlLimits{4, 100}).ok());
  EXPECT_FALSE(YamlToJson("[1, 2, 3, 4]\n", "t", YamlLimits{8, 4}).ok());
}

}  // namespace
}  // namespace titan
