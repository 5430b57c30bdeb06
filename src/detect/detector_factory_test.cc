#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "src/detect/detect_test_util.h"
#include "src/detect/detector.h"

namespace titan {
namespace {

// The error message of ParseDetectorSpec(text), or "" if it parsed.
std::string ParseError(std::string_view text) {
  Result<DetectorSpec> spec = ParseDetectorSpec(text);
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
  return std::string(spec.status().message());
}

TEST(DetectorFactoryTest, ParsesKindAndParams) {
  Result<DetectorSpec> plain = ParseDetectorSpec("zscore");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->kind, "zscore");
  EXPECT_TRUE(plain->params.empty());

  Result<DetectorSpec> spec = ParseDetectorSpec("zscore:window=200,k=4");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->params.at("window"), 200);
  EXPECT_EQ(spec->params.at("k"), 4);

  Result<DetectorSpec> spaced = ParseDetectorSpec(" mad : window = 32 , direction = dip ");
  ASSERT_TRUE(spaced.ok()) << spaced.status().ToString();
  EXPECT_EQ(spaced->kind, "mad");
  EXPECT_EQ(spaced->params.at("direction"), -1);
}

TEST(DetectorFactoryTest, UnknownKindListsTheKinds) {
  std::string error = ParseError("zscroe:k=3");
  EXPECT_NE(error.find("unknown detector kind \"zscroe\""), std::string::npos) << error;
  EXPECT_NE(error.find("zscore, mad, cusum, periodic"), std::string::npos) << error;
}

TEST(DetectorFactoryTest, UnknownKeyNamesItAndListsAllowedKeysWithRanges) {
  std::string error = ParseError("zscore:windw=200");
  EXPECT_NE(error.find("unknown key \"windw\""), std::string::npos) << error;
  EXPECT_NE(error.find("window (integer >= 2 .. 1000000, default 100)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("k (> 0"), std::string::npos) << error;
  // cusum has its own keys.
  error = ParseError("cusum:window=10");
  EXPECT_NE(error.find("drift"), std::string::npos) << error;
}

TEST(DetectorFactoryTest, AbsurdValuesAreRejected) {
  for (const char* text : {"zscore:window=0",
                           "zscore:window=2000000",
                           "zscore:window=1.5",
                           "zscore:k=0",
                           "zscore:k=-1",
                           "zscore:k=nan",
                           "zscore:k=inf",
                           "zscore:k=",
                           "zscore:window",
                           "zscore:",
                           "zscore:k=3,k=4",
                           "zscore:direction=up",
                           "mad:window=5000",
                           "cusum:alpha=0",
                           "cusum:alpha=1.5",
                           "cusum:h=0",
                           "periodic:min_occurrences=2",
                           "periodic:tolerance=0.9",
                           "zscore:window=10,min_samples=50",
                           "zscore:max_duration=1",
                           ""}) {
    EXPECT_NE(ParseError(text), "") << text;
  }
  EXPECT_NE(ParseError("zscore:window=0").find("window=0 is out of range"), std::string::npos);
}

TEST(DetectorFactoryTest, MakesEveryKind) {
  for (const char* kind : {"zscore", "mad", "cusum", "periodic"}) {
    Result<DetectorSpec> spec = ParseDetectorSpec(kind);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    Result<std::unique_ptr<Detector>> detector = MakeDetector(*spec);
    ASSERT_TRUE(detector.ok()) << detector.status().ToString();
    EXPECT_EQ((*detector)->name(), kind);
  }
}

TEST(DetectorFactoryTest, MadeDetectorUsesTheParams) {
  // k=50: a 10-sigma spike is not anomalous; the default k=3 would report it.
  std::vector<double> values = detect_test::BoundedNoise(300, 0, 31);
  values[200] = 6;
  for (const auto& [text, expected] :
       std::vector<std::pair<const char*, size_t>>{{"zscore:k=50", 0}, {"zscore", 1}}) {
    Result<std::unique_ptr<Detector>> detector = MakeDetector(*ParseDetectorSpec(text));
    ASSERT_TRUE(detector.ok());
    EXPECT_EQ(detect_test::Feed(**detector, values).size(), expected) << text;
  }
  // A small window takes a smaller default min_samples instead of failing.
  EXPECT_TRUE(MakeDetector(*ParseDetectorSpec("zscore:window=5")).ok());
}

TEST(DetectorFactoryTest, HelpListsEveryKindOnItsOwnLine) {
  const std::string help = DetectorSpecHelp();
  for (const char* line : {"zscore: window", "mad: window", "cusum: drift", "periodic: window"}) {
    const bool starts_a_line =
        help.rfind(line, 0) == 0 || help.find(std::string("\n") + line) != std::string::npos;
    EXPECT_TRUE(starts_a_line) << line << " in\n" << help;
  }
  EXPECT_EQ(std::count(help.begin(), help.end(), '\n'), 4) << help;
}

TEST(DetectorFactoryTest, MakeDetectorValidatesHandBuiltSpecs) {
  DetectorSpec spec{"mad", {{"window", 1e9}}};
  Result<std::unique_ptr<Detector>> detector = MakeDetector(spec);
  ASSERT_FALSE(detector.ok());
  EXPECT_EQ(detector.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(detector.status().message().find("mad: window="), std::string_view::npos)
      << detector.status().message();
  EXPECT_FALSE(MakeDetector(DetectorSpec{"nope", {}}).ok());
}

}  // namespace
}  // namespace titan
