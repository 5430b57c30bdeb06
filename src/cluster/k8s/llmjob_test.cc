#include "src/cluster/k8s/llmjob.h"

#include <gtest/gtest.h>

#include "src/base/env.h"

namespace titan::k8s {
namespace {

constexpr char kJob[] = R"(apiVersion: titan.io/v1alpha1
kind: LLMJob
metadata: {name: llm, namespace: training}
spec:
  replicas: 1024
  minReplicas: 512
  maxReplicas: 2048
  scaleDownDelay: 300s
  image: img:1
  command: [python3, train.py]
  resources: {limits: {nvidia.com/gpu: 1}}
)";

std::string With(std::string_view from, std::string_view to) {
  std::string text = kJob;
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(LlmJobTest, ReadsTheUsersJob) {
  auto job = LoadLlmJobText(kJob, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->Key(), "training/llm");
  EXPECT_EQ(job->replicas, 1024);
  EXPECT_EQ(job->min_replicas, 512);
  EXPECT_EQ(job->max_replicas, 2048);
  EXPECT_EQ(job->scale_down_delay_ns, 300'000'000'000);
  EXPECT_EQ(job->gpus_per_replica, 1);
  EXPECT_EQ(job->WorkersPerReplica(), 1);
  EXPECT_EQ(job->command, (std::vector<std::string>{"python3", "train.py"}));
}

TEST(LlmJobTest, TheExampleInDeployIsValid) {
  auto text = Env::ReadFile(TITAN_SOURCE_DIR "/deploy/k8s/example-llmjob.yaml");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(LoadLlmJobText(*text, "example").ok());
}

void ExpectError(const std::string& text, std::string_view needle) {
  auto job = LoadLlmJobText(text, "job.yaml");
  ASSERT_FALSE(job.ok()) << "accepted: " << text;
  EXPECT_NE(job.status().message().find(needle), std::string_view::npos) << job.status().message();
  EXPECT_EQ(job.status().message().rfind("job.yaml: ", 0), 0u) << job.status().message();
}

TEST(LlmJobTest, OutOfBoundsNamesTheField) {
  ExpectError(With("minReplicas: 512", "minReplicas: 1500"),
              "spec.minReplicas (1500) is greater than spec.replicas (1024)");
  ExpectError(With("maxReplicas: 2048", "maxReplicas: 1000"),
              "spec.maxReplicas (1000) is less than spec.replicas (1024)");
  ExpectError(With("replicas: 1024", "replicas: 0"), "spec.replicas (0) must lie in 1..100000");
  ExpectError(With("  minReplicas: 512\n", ""), "spec.minReplicas is missing");
  ExpectError(With("replicas: 1024", "replicas: many"), "spec.replicas must be an integer");
}

// Found by k8s_kubeconfig_fuzzer: the error message dumped the bad value, and dump() throws on
// invalid UTF-8, which ended `titan k8s manifests` with std::terminate.
TEST(LlmJobTest, AValueWithInvalidUtf8IsAnErrorNotACrash) {
  std::string text =
      "apiVersion: titan.io/v1alpha1\nkind: LLMJob\nmetadata: {name: j}\n"
      "spec: {replicas: \"\xff\xfe\", minReplicas: 1, maxReplicas: 2}\n";
  auto job = LoadLlmJobText(text, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("spec.replicas"), std::string::npos)
      << job.status().message();
}

TEST(LlmJobTest, OtherFieldsAreChecked) {
  ExpectError(With("300s", "soon"), "spec.scaleDownDelay 'soon' is not a duration");
  ExpectError(With("300s", "300"), "spec.scaleDownDelay must be a string");
  ExpectError(With("300s", "'300'"), "spec.scaleDownDelay '300' is not a duration");
  ExpectError(With("command: [python3, train.py]", "command: []"), "spec.command");
  ExpectError(With("  image: img:1\n", ""), "spec.image is missing");
  ExpectError(With("nvidia.com/gpu: 1", "nvidia.com/gpu: half"), "nvidia.com/gpu");
  ExpectError(With("kind: LLMJob", "kind: Job"), "expected apiVersion titan.io/v1alpha1");
  ExpectError(With("name: llm", "name: LLM_1"), "metadata.name 'LLM_1'");
  ExpectError(With("image: img:1", "image: img:1\n  checkpointDir: ckpt"),
              "spec.checkpointDir 'ckpt' must be an absolute path");
  ExpectError(std::string(kJob) + "---\n" + kJob, "holds 2 documents");
}

}  // namespace
}  // namespace titan::k8s
