// SigV4 signing against AWS's published examples: the Signature Version 4
// test suite (get-vanilla, get-vanilla-query-order-key-case, post-vanilla)
// and the S3 API reference's ranged GET Object; SHA-256 and HMAC-SHA256
// against FIPS 180-2 and RFC 4231; credentials from the environment and the
// shared credentials file.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "io/md5.h"
#include "io/s3_request.h"
#include "io/sigv4.h"
#include "tests/test_util.h"

namespace pcr {
namespace {

std::string Hex(const std::string& bytes) {
  std::string out;
  for (const unsigned char c : bytes) {
    out.push_back("0123456789abcdef"[c >> 4]);
    out.push_back("0123456789abcdef"[c & 15]);
  }
  return out;
}

TEST_CASE("SHA-256 and HMAC-SHA256 give the published digests") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(Sha256Hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // RFC 4231 test cases 2 and 6 (a key longer than the block).
  CHECK(Hex(HmacSha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(Hex(HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("MD5 gives RFC 1321's digests") {
  CHECK(Md5Hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(Md5Hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(Md5Hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  CHECK(Md5Hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
        "57edf4a22be3c955ac49da2e2107b67a");
  CHECK(Md5Hex(std::string(55, 'a')) == "ef1772b6dff9a122358552954ad0df65");
  CHECK(Md5Hex(std::string(56, 'a')) == "3b0c8ac703f828b04c6c197006d17218");
  CHECK(Md5Hex(std::string(64, 'a')) == "014842d480b571495a4a0363793f7367");
}

const AwsCredentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};

std::string Authorization(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) {
    if (name == "Authorization") return value;
  }
  return "";
}

TEST_CASE("the Signature Version 4 test suite's requests sign as published") {
  const std::string empty = Sha256Hex("");
  struct Case {
    std::string method, query, signature;
  };
  for (const Case& c : {Case{"GET", "", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
                        Case{"GET", "Param2=value2&Param1=value1",
                             "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
                        Case{"POST", "", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"}}) {
    INFO(c.method << " ?" << c.query);
    const SigV4Request r{.method = c.method, .host = "example.amazonaws.com", .query = c.query,
                         .payload_sha256 = empty};
    const auto headers = SignV4(r, kSuite, "us-east-1", "service", "20150830T123600Z");
    CHECK(headers[0] == std::pair<std::string, std::string>{"x-amz-date", "20150830T123600Z"});
    CHECK(Authorization(headers) ==
          "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
          "SignedHeaders=host;x-amz-date, Signature=" + c.signature);
  }
}

TEST_CASE("S3's ranged GET Object example signs as the S3 API reference shows") {
  const SigV4Request r{.host = "examplebucket.s3.amazonaws.com",
                       .path = "/test.txt",
                       .headers = {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", Sha256Hex("")}},
                       .payload_sha256 = Sha256Hex("")};
  const AwsCredentials s3{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  CHECK(Authorization(SignV4(r, s3, "us-east-1", "s3", "20130524T000000Z")) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  // A session token is sent and signed.
  const auto with_token = SignV4(r, {s3.access_key_id, s3.secret_access_key, "TOKEN"}, "us-east-1", "s3",
                                 "20130524T000000Z");
  CHECK(with_token[1] == std::pair<std::string, std::string>{"x-amz-security-token", "TOKEN"});
  CHECK_THAT(Authorization(with_token),
             Catch::Contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token"));
  CHECK(AmzDate(1440938160) == "20150830T123600Z");
}

TEST_CASE("credentials come from the environment, then the shared credentials file") {
  test::TempDir tmp;
  const std::string file = tmp / "credentials";
  std::ofstream(file) << "# comment\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key=SDEFAULT\n\n"
                         "[other]\naws_access_key_id=AKOTHER\naws_secret_access_key = SOTHER\naws_session_token = T\n";
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"}) unsetenv(v);
  setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  auto c = LoadAwsCredentials();
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  CHECK((*c)->access_key_id == "AKDEFAULT");
  CHECK((*c)->secret_access_key == "SDEFAULT");
  setenv("AWS_PROFILE", "other", 1);
  c = LoadAwsCredentials();
  REQUIRE(c.ok());
  CHECK((*c)->session_token == "T");
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SENV", 1);
  c = LoadAwsCredentials();
  CHECK((*c)->access_key_id == "AKENV");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  setenv("AWS_PROFILE", "missing", 1);
  c = LoadAwsCredentials();
  REQUIRE_FALSE(c.ok());  // never anonymous by a typo
  CHECK_THAT(c.status().message(), Catch::Contains("AWS_PROFILE=missing: no such profile in " + file));
  unsetenv("AWS_PROFILE");
  setenv("AWS_SHARED_CREDENTIALS_FILE", (tmp / "none").c_str(), 1);
  setenv("AWS_CONFIG_FILE", (tmp / "none").c_str(), 1);
  c = LoadAwsCredentials();
  REQUIRE(c.ok());
  CHECK_FALSE(c->has_value());  // anonymous access
  setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  unsetenv("AWS_CONFIG_FILE");
  std::ofstream(file) << "[default]\naws_access_key_id\n";
  unsetenv("AWS_PROFILE");
  c = LoadAwsCredentials();
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.status().message(), Catch::Contains(file + ": line 2"));
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("error messages never carry a URL's password or a presigned URL's signature") {
  const Status s = Status::IOError(
      "http://alice:s3cr%40t@host:8080/a.tar: HTTP 403; https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
      "&X-Amz-Credential=AKIDEXAMPLE%2F20261127&X-Amz-Signature=abcdef0123&x-id=GetObject: refused");
  CHECK(s.message() ==
        "http://alice:***@host:8080/a.tar: HTTP 403; https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=***&X-Amz-Signature=***&x-id=GetObject: refused");
  CHECK(Status::NotFound("s3://bucket/a@b/c.jpg: not found").message() == "s3://bucket/a@b/c.jpg: not found");
  CHECK(Status::IOError("https://user@host/x?sig=1&se=2").WithPrefix("p").message() == "p: https://user@host/x?sig=***&se=2");
  CHECK(RedactSecrets("no URL here: a:b@c") == "no URL here: a:b@c");
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("the AWS config file gives a profile's region, endpoint, CA bundle and credential_process") {
  test::TempDir tmp;
  const std::string credentials = tmp / "credentials", config = tmp / "config";
  std::ofstream(credentials) << "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = SDEFAULT\n";
  std::ofstream(config) << "[default]\nregion = eu-north-1\n\n"
                           "[profile dev]\nregion = eu-west-3\nca_bundle = /etc/dev-ca.pem\n"
                           "credential_process = printf '{\"Version\": 1, \"AccessKeyId\": \"AKPROC\", "
                           "\"SecretAccessKey\": \"SPROC\", \"SessionToken\": \"TPROC\", \"Expiration\": null}'\n"
                           "services = local\n\n"
                           "[services local]\ns3 =\n  endpoint_url = http://127.0.0.1:9\n\n"
                           "[profile plain]\nregion = ap-south-1\nendpoint_url = http://plain:1\n\n"
                           "[profile broken]\ncredential_process = false\n";
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
                        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_CA_BUNDLE",
                        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"}) {
    unsetenv(v);
  }
  setenv("AWS_SHARED_CREDENTIALS_FILE", credentials.c_str(), 1);
  setenv("AWS_CONFIG_FILE", config.c_str(), 1);
  auto url = [] { return S3Signer::FromOptions({}).Address("s3://b/k")->url; };
  CHECK(url() == "https://b.s3.eu-north-1.amazonaws.com/k");  // [default] of the config file
  setenv("AWS_PROFILE", "dev", 1);
  auto c = LoadAwsCredentials();
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  CHECK((*c)->access_key_id == "AKPROC");
  CHECK((*c)->session_token == "TPROC");
  CHECK(url() == "http://127.0.0.1:9/b/k");  // its services section
  CHECK(S3Signer::FromOptions({}).ca_bundle() == "/etc/dev-ca.pem");
  setenv("AWS_CA_BUNDLE", "/etc/env-ca.pem", 1);
  CHECK(S3Signer::FromOptions({}).ca_bundle() == "/etc/env-ca.pem");
  setenv("AWS_ENDPOINT_URL", "http://general:3", 1);
  CHECK(url() == "http://general:3/b/k");
  setenv("AWS_ENDPOINT_URL_S3", "http://s3only:2", 1);
  CHECK(url() == "http://s3only:2/b/k");
  CHECK(S3Signer::FromOptions({.s3_endpoint = "http://option:4"}).Address("s3://b/k")->url == "http://option:4/b/k");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_ENDPOINT_URL_S3");
  setenv("AWS_PROFILE", "plain", 1);
  CHECK(url() == "http://plain:1/b/k");
  setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
  CHECK(url() == "https://b.s3.ap-south-1.amazonaws.com/k");
  setenv("AWS_REGION", "us-west-2", 1);
  CHECK(url() == "https://b.s3.us-west-2.amazonaws.com/k");
  setenv("AWS_PROFILE", "broken", 1);
  c = LoadAwsCredentials();
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.status().message(), Catch::Contains("credential_process of profile broken: exited with status"));
  setenv("AWS_PROFILE", "nope", 1);
  c = LoadAwsCredentials();
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.status().message(), Catch::Contains("AWS_PROFILE=nope: no such profile in " + credentials + " or " + config));
  // A signer of a profile that does not exist signs nothing: its requests fail, naming the object.
  const S3Signer signer = S3Signer::FromOptions({});
  auto headers = signer.Headers("s3://b/k", *signer.Address("s3://b/k"), "GET", "", {}, "");
  REQUIRE_FALSE(headers.ok());
  CHECK_THAT(headers.status().message(), Catch::Contains("s3://b/k: AWS_PROFILE=nope"));
  for (const char* v : {"AWS_PROFILE", "AWS_REGION", "AWS_CA_BUNDLE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
                        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"}) {
    unsetenv(v);
  }
}

}  // namespace
}  // namespace pcr
