#include "src/cluster/k8s/kubeconfig.h"

#include <map>

#include <gtest/gtest.h>

namespace titan::k8s {
namespace {

// Files the parser may read: an in-memory map (the parser's only I/O goes through ReadFileFn).
ReadFileFn Files(std::map<std::string, std::string> files) {
  return [files](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return NotFoundError(path + ": no such file");
    return it->second;
  };
}

constexpr char kConfig[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTg==
- name: c2
  cluster: {server: "https://127.0.0.1:8443", certificate-authority: ca.crt, insecure-skip-tls-verify: true}
users:
- name: u1
  user: {token: abc}
- name: u2
  user: {client-certificate: certs/u2.crt, client-key: /abs/u2.key}
- name: u3
  user: {tokenFile: tok}
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: training}
- name: other
  context: {cluster: c2, user: u2}
- name: file-token
  context: {cluster: c2, user: u3}
- name: broken
  context: {cluster: nope, user: u1}
)";

TEST(KubeconfigTest, CurrentContextWithTokenAndCaData) {
  auto e = ParseKubeconfig(kConfig, "/home/k/.kube/config", "", Files({}));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->server, "https://10.0.0.1:6443");
  EXPECT_EQ(e->ca_pem, "-----BEGIN");
  EXPECT_EQ(e->token, "abc");
  EXPECT_EQ(e->namespace_, "training");
  EXPECT_EQ(e->source, "kubeconfig /home/k/.kube/config (context dev)");
}

TEST(KubeconfigTest, ClientCertificateFilesRelativeToTheConfig) {
  auto e = ParseKubeconfig(kConfig, "/home/k/.kube/config", "other", Files({}));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->ca_file, "/home/k/.kube/ca.crt");
  EXPECT_TRUE(e->insecure_skip_tls_verify);
  EXPECT_EQ(e->client_cert_file, "/home/k/.kube/certs/u2.crt");
  EXPECT_EQ(e->client_key_file, "/abs/u2.key");
  EXPECT_TRUE(e->token.empty());
}

TEST(KubeconfigTest, TokenFileIsRead) {
  auto e = ParseKubeconfig(kConfig, "/k/config", "file-token", Files({{"/k/tok", "t0k\n"}}));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->token, "t0k");
  auto missing = ParseKubeconfig(kConfig, "/k/config", "file-token", Files({}));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(KubeconfigTest, ErrorsNameTheEntry) {
  auto e = ParseKubeconfig(kConfig, "k", "broken", Files({}));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("names cluster 'nope'"), std::string_view::npos);
  e = ParseKubeconfig(kConfig, "k", "absent", Files({}));
  EXPECT_NE(e.status().message().find("context 'absent' is not among"), std::string_view::npos);
  e = ParseKubeconfig("clusters: []\n", "k", "", Files({}));
  EXPECT_NE(e.status().message().find("no current-context"), std::string_view::npos);
  e = ParseKubeconfig("- just a list\n", "k", "", Files({}));
  EXPECT_FALSE(e.ok());
  std::string exec = kConfig;
  exec.replace(exec.find("{token: abc}"), 12, "{exec: {command: aws}}");
  e = ParseKubeconfig(exec, "k", "", Files({}));
  EXPECT_EQ(e.status().code(), StatusCode::kUnimplemented);
  std::string bad64 = kConfig;
  bad64.replace(bad64.find("LS0tLS1CRUdJTg=="), 16, "not*base64");
  e = ParseKubeconfig(bad64, "k", "", Files({}));
  EXPECT_NE(e.status().message().find("certificate-authority-data is not valid base64"),
            std::string_view::npos);
}

TEST(KubeconfigTest, InCluster) {
  GetEnvFn env = [](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "KUBERNETES_SERVICE_HOST") return "10.96.0.1";
    if (std::string(name) == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  auto e = InClusterEndpoint(env, Files({{"/sa/token", "tok\n"}, {"/sa/namespace", "ml"}}), "/sa");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->server, "https://10.96.0.1:443");
  EXPECT_EQ(e->token, "tok");
  EXPECT_EQ(e->ca_file, "/sa/ca.crt");
  EXPECT_EQ(e->namespace_, "ml");
  GetEnvFn none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(InClusterEndpoint(none, Files({}), "/sa").status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace titan::k8s
