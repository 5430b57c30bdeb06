#include "src/s3/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace titan::s3 {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::temp_directory_path() /
            ("titan-s3-config-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(home_ / ".aws");
    vars_["HOME"] = home_.string();
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  void Write(const char* name, const std::string& text) {
    std::ofstream(home_ / ".aws" / name) << text;
  }
  Result<Config> Resolve() {
    return ResolveConfig([this](const char* name) -> std::optional<std::string> {
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    });
  }
  std::filesystem::path home_;
  std::map<std::string, std::string> vars_;
};

TEST_F(ConfigTest, EnvironmentWinsOverFiles) {
  Write("credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FS\n");
  vars_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  vars_["AWS_SECRET_ACCESS_KEY"] = "ES";
  vars_["AWS_REGION"] = "eu-west-1";
  vars_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:7480/";
  vars_["AWS_CA_BUNDLE"] = "/etc/ssl/certs/ca-certificates.crt";
  auto config = Resolve();
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->access_key_id, "ENVKEY");
  EXPECT_EQ(config->secret_access_key, "ES");
  EXPECT_EQ(config->region, "eu-west-1");
  EXPECT_EQ(config->endpoint, "http://127.0.0.1:7480");
  EXPECT_EQ(config->ca_bundle, "/etc/ssl/certs/ca-certificates.crt");
}

TEST_F(ConfigTest, ProfileFromCredentialsAndConfigFiles) {
  Write("credentials",
        "# comment\n[default]\naws_access_key_id=D\naws_secret_access_key=DS\r\n\n"
        "[prod]\naws_access_key_id = P\naws_secret_access_key = PS\naws_session_token = T\n");
  Write("config",
        "[profile prod]\nregion = ap-south-1\nendpoint_url = https://s3.example.com\n"
        "s3 =\n  addressing_style = path\n");
  vars_["AWS_PROFILE"] = "prod";
  auto config = Resolve();
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->access_key_id, "P");
  EXPECT_EQ(config->session_token, "T");
  EXPECT_EQ(config->region, "ap-south-1");
  EXPECT_EQ(config->endpoint, "https://s3.example.com");
  EXPECT_NE(config->credentials_source.find("[prod]"), std::string::npos);
}

TEST_F(ConfigTest, MissingCredentialsSayWhatToSet) {
  auto config = Resolve();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(config.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_NE(config.status().message().find(".aws/credentials"), std::string::npos);
}

TEST_F(ConfigTest, MalformedFileNamesFileAndLine) {
  Write("credentials", "[default]\naws_access_key_id = A\nthis line is wrong\n");
  auto config = Resolve();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("credentials:3"), std::string::npos)
      << config.status().ToString();
}

TEST_F(ConfigTest, EndpointWithoutSchemeIsRejected) {
  vars_["AWS_ACCESS_KEY_ID"] = "A";
  vars_["AWS_SECRET_ACCESS_KEY"] = "S";
  vars_["AWS_ENDPOINT_URL_S3"] = "127.0.0.1:7480";
  auto config = Resolve();
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("http://"), std::string::npos);
}

TEST(S3Url, Parses) {
  auto l = ParseS3Url("s3://my-bucket/ckpt/run-1/");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->bucket, "my-bucket");
  EXPECT_EQ(l->prefix, "ckpt/run-1");
  auto bare = ParseS3Url("s3://bucket");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->prefix, "");
  for (const char* bad : {"s3://", "s3://Upper/x", "s3://ab/x", "s3://b-/x", "s3://bucket//x",
                          "/local/dir", "s3://bucket/a//b"}) {
    EXPECT_FALSE(ParseS3Url(bad).ok()) << bad;
  }
  EXPECT_TRUE(IsS3Url("s3://b"));
  EXPECT_FALSE(IsS3Url("/tmp/s3://"));
}

}  // namespace
}  // namespace titan::s3
