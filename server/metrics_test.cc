// Prometheus exposition pieces (server/metrics.h), the metrics address parser (server/metrics_http.h) and
// the bearer-token checker (server/auth.h).
#include "server/metrics.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/auth.h"
#include "server/metrics_http.h"

namespace augmentd {
namespace {

TEST(LatencyHistogramTest, CumulativeBucketsSumAndCount) {
  LatencyHistogram h;
  h.Observe(absl::Microseconds(50));    // ≤ 100 µs
  h.Observe(absl::Microseconds(100));   // ≤ 100 µs (bounds are inclusive)
  h.Observe(absl::Milliseconds(3));     // ≤ 5 ms
  h.Observe(absl::Seconds(20));         // +Inf only
  const std::vector<uint64_t> c = h.CumulativeCounts();
  ASSERT_EQ(c.size(), LatencyHistogram::kBounds.size() + 1);
  EXPECT_EQ(c[0], 2u);
  EXPECT_EQ(c[4], 2u);   // ≤ 2.5 ms
  EXPECT_EQ(c[5], 3u);   // ≤ 5 ms
  EXPECT_EQ(c[13], 3u);  // ≤ 10 s
  EXPECT_EQ(c.back(), 4u);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_NEAR(h.sum_seconds(), 20.00315, 1e-9);
}

TEST(ServerMetricsTest, PerSessionHistogramsAndRetain) {
  ServerMetrics m;
  m.ObserveBatch("a", absl::Milliseconds(1), absl::Milliseconds(2), absl::Milliseconds(30));
  m.ObserveBatch("a", absl::Milliseconds(1), absl::Milliseconds(2), absl::Milliseconds(30));
  m.ObserveBatch("b", absl::Milliseconds(1), absl::Milliseconds(2), absl::Milliseconds(30));
  EXPECT_EQ(m.SessionHistograms("a")[static_cast<int>(BatchPhase::kCompute)].count(), 2u);
  EXPECT_NEAR(m.SessionHistograms("a")[static_cast<int>(BatchPhase::kLoad)].sum_seconds(), 0.004, 1e-12);
  m.Retain({"b"});
  EXPECT_EQ(m.SessionHistograms("a")[0].count(), 0u);
  EXPECT_EQ(m.SessionHistograms("b")[0].count(), 1u);
}

TEST(ExpositionTest, FamilyFormatAndEscaping) {
  std::string out;
  AppendFamily(&out, "x_total", "counter", "Things.", {{{{"session", "s1"}, {"name", "a\"b\\c\nd"}}, 3}, {{}, 0.5}});
  EXPECT_EQ(out,
            "# HELP x_total Things.\n# TYPE x_total counter\n"
            "x_total{session=\"s1\",name=\"a\\\"b\\\\c\\nd\"} 3\n"
            "x_total 0.5\n");
}

TEST(HttpAddressTest, PortHostPortAndV6) {
  absl::StatusOr<HttpAddress> a = ParseHttpAddress("9102");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 9102);
  a = ParseHttpAddress("127.0.0.1:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  a = ParseHttpAddress("[::1]:80");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  for (const char* bad : {"70000", "x", ":80", "host:", "-1"}) {
    absl::StatusOr<HttpAddress> b = ParseHttpAddress(bad);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StrContains(b.status().message(), "--metrics_port")) << b.status();
  }
}

TEST(TokenAuthenticatorTest, AcceptsListedTokensOnly) {
  absl::StatusOr<TokenAuthenticator> auth = TokenAuthenticator::FromText("# tokens\n  alpha \n\nbeta-2\n", "t");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ(auth->num_tokens(), 2u);
  EXPECT_TRUE(auth->CheckHeader("Bearer alpha").ok());
  EXPECT_TRUE(auth->CheckHeader("Bearer beta-2").ok());
  for (const char* bad : {"Bearer alph", "Bearer alphaa", "alpha", "Basic alpha", "Bearer ", ""}) {
    const absl::Status s = auth->CheckHeader(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << bad;
    EXPECT_FALSE(absl::StrContains(s.message(), "alpha")) << s;  // never echoes a token
  }
}

TEST(TokenAuthenticatorTest, RejectsEmptyOrMalformedFiles) {
  EXPECT_EQ(TokenAuthenticator::FromText("# nothing\n\n", "f").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TokenAuthenticator::FromText("two words\n", "f").status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status missing = TokenAuthenticator::FromFile("/nonexistent/tokens").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.message(), "--auth_token_file")) << missing;
}

}  // namespace
}  // namespace augmentd
