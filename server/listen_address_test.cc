// Tests for server/listen_address.h.
#include "server/listen_address.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(ParseListenAddressTest, AcceptsTcpAndUnix) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress("0.0.0.0:50051");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->is_unix);
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 50051);

  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "[::1]");
  EXPECT_EQ(a->port, 0);

  a = ParseListenAddress("localhost:8000");
  ASSERT_TRUE(a.ok()) << a.status();

  a = ParseListenAddress("unix:///run/augmentd/aug.sock");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->is_unix);
  EXPECT_EQ(a->unix_path, "/run/augmentd/aug.sock");
  EXPECT_EQ(a->uri, "unix:///run/augmentd/aug.sock");

  a = ParseListenAddress("unix:relative.sock");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->unix_path, "relative.sock");
}

TEST(ParseListenAddressTest, RejectsMalformed) {
  for (const char* bad : {"", "50051", ":50051", "host:", "host:port", "host:70000", "host:-1", "::1:50051",
                          "unix://", "unix://relative", "unix:", "http://host:80", "tcp://host:1"}) {
    EXPECT_EQ(ParseListenAddress(bad).status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
  EXPECT_EQ(ParseListenAddress("unix:///" + std::string(200, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CheckUnixSocketFreeTest, DetectsListenerAndNonSocket) {
  char dir_template[] = "/tmp/augmentd_listen_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/s.sock";
  absl::StatusOr<ListenAddress> a = ParseListenAddress("unix://" + path);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(CheckUnixSocketFree(*a).ok());  // nothing there

  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_TRUE(CheckUnixSocketFree(*a).ok());  // a socket file nobody listens on is stale
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_EQ(CheckUnixSocketFree(*a).code(), absl::StatusCode::kUnavailable);  // in use
  close(fd);
  unlink(path.c_str());

  std::ofstream(path) << "not a socket";
  EXPECT_EQ(CheckUnixSocketFree(*a).code(), absl::StatusCode::kUnavailable);
  unlink(path.c_str());

  absl::StatusOr<ListenAddress> missing_dir = ParseListenAddress("unix://" + dir + "/nope/s.sock");
  ASSERT_TRUE(missing_dir.ok());
  EXPECT_EQ(CheckUnixSocketFree(*missing_dir).code(), absl::StatusCode::kUnavailable);
  rmdir(dir.c_str());

  EXPECT_TRUE(CheckUnixSocketFree(*ParseListenAddress("127.0.0.1:1")).ok());  // TCP: left to bind()
}

}  // namespace
}  // namespace augmentd
