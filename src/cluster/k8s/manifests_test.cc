#include "src/cluster/k8s/manifests.h"

#include <gtest/gtest.h>

#include "src/base/env.h"
#include "src/base/yaml_json.h"
#include "src/cluster/k8s/crd_yaml.h"

namespace titan::k8s {
namespace {

using nlohmann::json;

LlmJob Example() {
  auto text = Env::ReadFile(TITAN_SOURCE_DIR "/deploy/k8s/example-llmjob.yaml");
  auto job = LoadLlmJobText(*text, "example");
  TITAN_CHECK(job.ok()) << job.status().ToString();
  return *job;
}

const json* Find(const std::vector<json>& docs, std::string_view kind) {
  for (const json& d : docs) {
    if (d["kind"] == kind) return &d;
  }
  return nullptr;
}

TEST(ManifestsTest, IndexedJobRunsTitanRunWithTheBounds) {
  std::vector<json> docs = JobManifests(Example(), {});
  const json* job = Find(docs, "Job");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ((*job)["spec"]["completionMode"], "Indexed");
  EXPECT_EQ((*job)["spec"]["parallelism"], 1024);
  EXPECT_EQ((*job)["spec"]["completions"], 1024);
  const json& container = (*job)["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> command = container["command"];
  std::string line;
  for (const std::string& arg : command) line += arg + " ";
  EXPECT_NE(line.find("titan run --nnodes 512:2048 --etcd http://llm-etcd.training.svc:2379 "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("--node-id $(POD_NAME)"), std::string::npos);
  EXPECT_NE(line.find("--on-isolate k8s-cordon"), std::string::npos);
  EXPECT_NE(line.find("-- python3 train.py"), std::string::npos);
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ((*job)["spec"]["template"]["spec"]["subdomain"], "llm");
  const json* service = Find(docs, "Service");
  ASSERT_NE(service, nullptr);  // the etcd's first, then the headless one
  EXPECT_NE(Find(docs, "StatefulSet"), nullptr);
}

TEST(ManifestsTest, GivenEtcdLeavesOutTheIncludedOne) {
  ManifestOptions options;
  options.etcd_endpoint = "http://etcd.example:2379";
  std::vector<json> docs = JobManifests(Example(), options);
  EXPECT_EQ(Find(docs, "StatefulSet"), nullptr);
  EXPECT_NE(Find(docs, "Job")->dump().find("http://etcd.example:2379"), std::string::npos);
}

TEST(ManifestsTest, RbacGrantsExactlyTheCordonVerbs) {
  std::vector<json> docs = JobManifests(Example(), {});
  const json* role = Find(docs, "ClusterRole");
  ASSERT_NE(role, nullptr);
  EXPECT_EQ(role->at("rules"), json::parse(R"([{"apiGroups":[""],"resources":["nodes"],
                                              "verbs":["get","patch"]}])"));
  const json* pod_role = Find(docs, "Role");
  EXPECT_EQ(pod_role->at("rules")[0]["verbs"], json::parse(R"(["get"])"));
  const json* binding = Find(docs, "ClusterRoleBinding");
  EXPECT_EQ(binding->at("subjects")[0]["name"], "llm-titan");
  EXPECT_EQ(binding->at("subjects")[0]["namespace"], "training");
}

TEST(ManifestsTest, YamlRoundTrips) {
  std::vector<json> docs = JobManifests(Example(), {});
  auto back = YamlToJson(JsonToYaml(docs), "manifests");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, docs);
  std::vector<json> controller = ControllerManifests({});
  EXPECT_EQ(*YamlToJson(JsonToYaml(controller), "controller"), controller);
}

TEST(CrdTest, EmbeddedCrdIsTheFileInDeploy) {
  auto text = Env::ReadFile(TITAN_SOURCE_DIR "/deploy/k8s/llmjob-crd.yaml");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(LlmJobCrdYaml(), *text);
  auto docs = YamlToJson(LlmJobCrdYaml(), "crd");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0]["spec"]["names"]["kind"], "LLMJob");
}

}  // namespace
}  // namespace titan::k8s
