#include "src/cluster/k8s/objects.h"

#include <gtest/gtest.h>

namespace titan::k8s {
namespace {

using nlohmann::json;

TEST(ObjectsTest, ListPage) {
  auto page = ParseListPage(
      R"({"kind":"NodeList","metadata":{"resourceVersion":"7","continue":"c"},
          "items":[{"metadata":{"name":"n1"}}]})",
      "GET /api/v1/nodes");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->resource_version, "7");
  EXPECT_EQ(page->continue_token, "c");
  EXPECT_EQ(page->items.size(), 1u);
  EXPECT_FALSE(ParseListPage(R"({"items":[{"metadata":{}}]})", "x").ok());
  EXPECT_FALSE(ParseListPage("<html>", "x").ok());
  EXPECT_FALSE(ParseListPage(std::string(1000, '['), "x").ok());
}

TEST(ObjectsTest, WatchEvents) {
  auto e = ParseWatchEvent(
      R"({"type":"MODIFIED","object":{"metadata":{"name":"n1","resourceVersion":"9"}}})", "w");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, "MODIFIED");
  EXPECT_EQ(e->resource_version, "9");
  e = ParseWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":410}})", "w");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->object["code"], 410);
  e = ParseWatchEvent(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})", "w");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->resource_version, "12");
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"EXPLODED","object":{}})", "w").ok());
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":{}}})", "w").ok());
  auto garbage = ParseWatchEvent("garbage", "watch https://api/api/v1/nodes");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("watch https://api/api/v1/nodes: not JSON"),
            std::string_view::npos);
}

TEST(ObjectsTest, NodeView) {
  json node =
      json::parse(R"({"metadata":{"name":"n1","annotations":{"titan.io/report-unhealthy":"xid"}},
    "spec":{"unschedulable":false,"taints":[{"key":"titan.io/unhealthy","effect":"NoSchedule"}]},
    "status":{"conditions":[{"type":"Ready","status":"True"}],"allocatable":{"nvidia.com/gpu":"8"}}})");
  auto view = ParseNodeView(node, "n");
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->ready);
  EXPECT_TRUE(view->titan_tainted);
  EXPECT_EQ(view->report, "xid");
  EXPECT_EQ(view->gpus, 8);
  EXPECT_FALSE(view->Usable());
  node["metadata"].erase("annotations");
  node["spec"].erase("taints");
  EXPECT_TRUE(ParseNodeView(node, "n")->Usable());
  node["status"]["conditions"][0]["status"] = "Unknown";
  EXPECT_FALSE(ParseNodeView(node, "n")->Usable());
}

}  // namespace
}  // namespace titan::k8s
