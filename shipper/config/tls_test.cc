// The one `ssl` block: its keys on each side, the problems Validate() names, the files Preflight()
// checks and Read() reads.
#include "shipper/config/tls.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shipper/config/loader.h"

namespace shipper {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const TlsBlock kServer("shipper.server.ssl", TlsSide::kServer, "clients");
const TlsBlock kClient("shipper.output.kafka.ssl", TlsSide::kClient, "the brokers");

std::string Path(absl::string_view name) { return absl::StrCat(getenv("TEST_TMPDIR"), "/", name); }

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(cert_) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::ofstream(key_) << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----";
  }

  // The settings -E `overrides` make through `block`'s keys, and their problems.
  static TlsSettings Load(const TlsBlock& block, const std::vector<std::string>& overrides,
                          std::string* problems) {
    TlsSettings tls;
    ConfigLoader loader(Bind(block.Keys(), &tls), {});
    for (const std::string& item : overrides) loader.LoadOverride(item);
    *problems = absl::StrJoin(loader.problems().all(), "\n");
    return tls;
  }

  // Every problem of `tls`, Validate()'s then Preflight()'s.
  static std::vector<std::string> Problems(const TlsBlock& block, const TlsSettings& tls) {
    shipper::Problems problems;
    block.Validate(tls, &problems);
    block.Preflight(tls, &problems);
    return problems.all();
  }

  const std::string cert_ = Path("cert.pem");
  const std::string key_ = Path("key.pem");
};

TEST_F(TlsTest, EachSideHasItsKeysUnderThePrefix) {
  std::vector<std::string> names;
  for (const Key<TlsSettings>& key : kServer.Keys()) names.push_back(key.name);
  EXPECT_THAT(names, ElementsAre("shipper.server.ssl.certificate", "shipper.server.ssl.key",
                                 "shipper.server.ssl.certificate_authorities",
                                 "shipper.server.ssl.client_authentication"));
  names.clear();
  for (const Key<TlsSettings>& key : kClient.Keys()) names.push_back(key.name);
  EXPECT_THAT(names,
              ElementsAre("shipper.output.kafka.ssl.enabled",
                          "shipper.output.kafka.ssl.certificate_authorities",
                          "shipper.output.kafka.ssl.certificate", "shipper.output.kafka.ssl.key",
                          "shipper.output.kafka.ssl.verification_mode"));
  std::string problems;
  TlsSettings tls = Load(kClient,
                         {"shipper.output.kafka.ssl.enabled=true",
                          "shipper.output.kafka.ssl.certificate_authorities=[/a.crt, /b.crt]",
                          "shipper.output.kafka.ssl.verification_mode=certificate"},
                         &problems);
  EXPECT_EQ(problems, "");
  EXPECT_TRUE(tls.enabled);
  EXPECT_THAT(tls.certificate_authorities, ElementsAre("/a.crt", "/b.crt"));
  EXPECT_EQ(tls.verification_mode, VerificationMode::kCertificate);
  tls = Load(kServer, {"shipper.server.ssl.client_authentication=optional"}, &problems);
  EXPECT_EQ(tls.client_authentication, ClientAuthentication::kOptional);
  Load(kServer, {"shipper.server.ssl.verification_mode=none"}, &problems);
  EXPECT_THAT(problems, HasSubstr("unknown config key 'shipper.server.ssl.verification_mode'"));
  Load(kClient, {"shipper.output.kafka.ssl.verification_mode=some"}, &problems);
  EXPECT_THAT(problems, HasSubstr("expected one of full|certificate|none"));
}

TEST_F(TlsTest, AServerServesTlsWithACertificateAndItsKey) {
  TlsSettings tls;
  EXPECT_FALSE(kServer.On(tls));
  EXPECT_THAT(Problems(kServer, tls), IsEmpty());
  tls.key = key_;
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre("shipper.server.ssl.key and client_authentication need "
                          "shipper.server.ssl.certificate: set it to serve TLS"));
  tls = TlsSettings{};
  tls.certificate = cert_;
  EXPECT_TRUE(kServer.On(tls));
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre("shipper.server.ssl.certificate needs shipper.server.ssl.key (its "
                          "private key)"));
  tls.key = Path("missing.pem");
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre(HasSubstr("'shipper.server.ssl.key': cannot read")));
  tls.key = cert_;
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre(HasSubstr("is not a PEM file with a PRIVATE KEY")));
  tls.key = key_;
  EXPECT_THAT(Problems(kServer, tls), IsEmpty());
  // The CAs only verify clients: unread until client_authentication asks for certificates.
  tls.certificate_authorities = {Path("missing-ca.pem")};
  EXPECT_THAT(Problems(kServer, tls), IsEmpty());
  tls.client_authentication = ClientAuthentication::kRequired;
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre(HasSubstr("'shipper.server.ssl.certificate_authorities': cannot read")));
  tls.certificate_authorities = {};
  EXPECT_THAT(Problems(kServer, tls),
              ElementsAre("shipper.server.ssl.client_authentication verifies client certificates "
                          "against shipper.server.ssl.certificate_authorities: set it"));
  tls.certificate_authorities = {cert_, cert_};
  EXPECT_THAT(Problems(kServer, tls), IsEmpty());
}

TEST_F(TlsTest, AClientSpeaksTlsWhenEnabled) {
  TlsSettings tls;
  tls.certificate_authorities = {cert_};
  EXPECT_FALSE(kClient.On(tls));
  EXPECT_THAT(Problems(kClient, tls),
              ElementsAre("config: shipper.output.kafka.ssl files are set but TLS is off: set "
                          "shipper.output.kafka.ssl.enabled: true"));
  tls.enabled = true;
  EXPECT_THAT(Problems(kClient, tls), IsEmpty());
  tls.certificate = cert_;
  EXPECT_THAT(Problems(kClient, tls),
              ElementsAre("config: shipper.output.kafka.ssl.certificate and "
                          "shipper.output.kafka.ssl.key go together (the client's own, for mTLS): "
                          "set both or neither"));
  tls.key = key_;
  tls.certificate_authorities = {Path("missing-ca.pem")};
  EXPECT_THAT(Problems(kClient, tls),
              ElementsAre(HasSubstr("'shipper.output.kafka.ssl.certificate_authorities': "
                                    "cannot read")));
}

TEST_F(TlsTest, ReadGathersTheFilesOfTlsThatIsOn) {
  TlsSettings tls;
  tls.certificate_authorities = {cert_, key_};
  absl::StatusOr<TlsPem> off = kClient.Read(tls);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->certificate_authorities, "");
  tls.enabled = true;
  absl::StatusOr<TlsPem> wrong = kClient.Read(tls);
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("'shipper.output.kafka.ssl.certificate_authorities': '" + key_ +
                        "' is not a PEM file with a CERTIFICATE"));
  tls.certificate_authorities = {cert_, cert_};
  tls.certificate = cert_;
  tls.key = key_;
  absl::StatusOr<TlsPem> pem = kClient.Read(tls);
  ASSERT_TRUE(pem.ok()) << pem.status();
  const std::string one = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  EXPECT_EQ(pem->certificate_authorities, one + one);
  EXPECT_EQ(pem->certificate, one);
  EXPECT_EQ(pem->key, "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
}

}  // namespace
}  // namespace shipper
