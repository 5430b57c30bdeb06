// The restricted pickle reader: reads torch's and Python's plain-value pickles, refuses
// anything that would construct an object, and stays bounded on hostile input.
#include "src/diagnose/sources/plain_pickle.h"

#include <gtest/gtest.h>

#include "src/diagnose/testing/dumps.h"

namespace titan::diagnose {
namespace {

using testing::PickleWriter;

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

TEST(PlainPickleTest, ReadsTorchStylePickleWithTypedLists) {
  PickleWriter w;
  w.EmptyDict()
      .Mark()
      .Str("sizes")
      .IntList(3, 4)
      .Str("big")
      .Int(1'724'779'239'936'775'119)
      .Str("neg")
      .Int(-5)
      .Str("f")
      .Float(0.25)
      .Str("ok")
      .Bool(true)
      .Str("none")
      .None()
      .SetItems()
      .Stop();
  auto tree = ReadPlainPickle(w.bytes(), "t.pkl");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto j = tree->ToJson(tree->root());
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->dump(),
            R"({"big":1724779239936775119,"f":0.25,"neg":-5,"none":null,"ok":true,"sizes":[3,4]})");
}

TEST(PlainPickleTest, ReadsPythonProtocol4) {
  // pickle.dumps(<a documented Flight Recorder dump>, protocol=4) by /usr/bin/python3: FRAME,
  // SHORT_BINUNICODE, MEMOIZE, BINGET, TUPLE2, LONG1.
  const std::string data = Unhex(
      "80049586010000000000007d94288c0776657273696f6e948c03322e35948c0970675f636f6e666967947d94"
      "8c0130947d94288c046e616d659468058c0464657363948c0a64656661756c745f7067948c0572616e6b7394"
      "8c065b302c20315d9475738c07656e7472696573945d947d94288c097265636f72645f6964944b008c057067"
      "5f6964944b008c0d70726f636573735f67726f7570946805680986948c11636f6c6c6563746976655f736571"
      "5f6964944b018c0a7032705f7365715f6964944b008c0e70726f66696c696e675f6e616d65948c0f6e63636c"
      "3a616c6c5f726564756365948c0f74696d655f637265617465645f6e73948a08cf53669894a5ef178c0b696e"
      "7075745f73697a6573945d945d94284b034b0465618c0c696e7075745f647479706573945d948c05466c6f61"
      "7494618c057374617465948c09636f6d706c65746564948c0669735f70327094898c066672616d6573945d94"
      "7d942868078c0473746570948c0866696c656e616d65948c08747261696e2e7079948c046c696e65944b2c75"
      "617561752e");
  auto tree = ReadPlainPickle(data, "p4.pkl");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto j = tree->ToJson(tree->root());
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["entries"][0]["process_group"].dump(), R"(["0","default_pg"])");
  EXPECT_EQ((*j)["entries"][0]["time_created_ns"], 1724779239936775119);
  EXPECT_EQ((*j)["pg_config"]["0"]["ranks"], "[0, 1]");
}

TEST(PlainPickleTest, RefusesObjectsAndCode) {
  struct Case {
    std::string bytes;
    const char* says;
  };
  const Case cases[] = {
      {PickleWriter().Global("os", "system").Mark().Str("id").Tuple().Op('R').Stop().bytes(),
       "refusing to load os.system"},
      {PickleWriter().Global("builtins", "eval").Stop().bytes(), "refusing to load builtins.eval"},
      {PickleWriter().EmptyDict().Op('b').Stop().bytes(), "BUILD"},
      {PickleWriter().Op('\x81').Stop().bytes(), "object construction"},
      {PickleWriter().Str("x").Op('Q').Stop().bytes(), "persistent id"},
      {PickleWriter().Str("abc").bytes(), "ends without STOP"},
      {PickleWriter().Raw("X\xff\xff\xff\x7f").bytes(), "bytes announced"},
      {PickleWriter().Op('h').Raw("\x05").Stop().bytes(), "never stored"},
      {PickleWriter().Op('\xfe').bytes(), "unknown opcode"},
      {PickleWriter().Op('a').bytes(), "stack is empty"},
  };
  for (const Case& c : cases) {
    auto tree = ReadPlainPickle(c.bytes, "evil.pkl");
    ASSERT_FALSE(tree.ok()) << c.says;
    EXPECT_NE(tree.status().message().find(c.says), std::string::npos) << tree.status().message();
    EXPECT_NE(tree.status().message().find("evil.pkl"), std::string::npos);
  }
}

TEST(PlainPickleTest, SharedAndSelfContainingValuesStayBounded) {
  // A list referenced 100,000 times through the memo costs one node, not 100,000 copies.
  PickleWriter w;
  w.EmptyList().Op('q').Raw("\x07").Mark();
  for (int i = 0; i < 100'000; ++i) w.Op('h').Raw("\x07");
  w.Appends().Stop();
  auto tree = ReadPlainPickle(w.bytes(), "shared.pkl");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(tree->Items(tree->root()).size(), 100'000u);
  // The list contains itself: a walk stops at the depth bound instead of recursing forever.
  auto json = tree->ToJson(tree->root(), 16);
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("deep"), std::string::npos);
  // A value budget bounds the arena.
  PickleWriter many;
  many.EmptyList().Mark();
  for (int i = 0; i < 1000; ++i) many.None();
  many.Appends().Stop();
  EXPECT_FALSE(ReadPlainPickle(many.bytes(), "many.pkl", 100).ok());
}

}  // namespace
}  // namespace titan::diagnose
