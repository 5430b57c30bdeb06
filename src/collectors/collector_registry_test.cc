#include "src/collectors/collector_registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace titan {
namespace {

TEST(CollectorRegistryTest, EveryEntryBuildsACollectorOfItsName) {
  std::set<std::string_view> names;
  for (const CollectorInfo& info : AllCollectors()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
    EXPECT_FALSE(info.help.empty()) << info.name;
    EXPECT_GT(info.default_interval_ns, 0) << info.name;
    std::unique_ptr<Collector> collector = info.make();
    ASSERT_NE(collector, nullptr) << info.name;
    EXPECT_EQ(collector->name(), info.name);
    Result<std::unique_ptr<Collector>> made = MakeCollector(info.name);
    ASSERT_TRUE(made.ok());
    EXPECT_EQ((*made)->name(), info.name);
  }
  for (const char* host : {"cpu", "memory", "net", "disk", "psi", "infiniband", "process"}) {
    EXPECT_TRUE(names.count(host)) << host;
  }
}

TEST(CollectorRegistryTest, UnknownNameListsTheKnownOnes) {
  Result<std::unique_ptr<Collector>> made = MakeCollector("gpu-magic");
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kNotFound);
  EXPECT_NE(made.status().message().find("cpu, memory"), std::string_view::npos)
      << made.status().ToString();
}

}  // namespace
}  // namespace titan
