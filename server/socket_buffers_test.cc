#include "server/socket_buffers.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace augmentd {
namespace {

int SendBuffer(int fd) {
  int value = 0;
  socklen_t len = sizeof(value);
  return getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, &len) == 0 ? value : -1;
}

int Listen(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 4) != 0) return -1;
  return fd;
}

int Connect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 ? fd : -1;
}

TEST(SocketBuffers, WidensAcceptedConnectionsOfTheListenPathsOnly) {
  std::ifstream wmem("/proc/sys/net/core/wmem_max");
  int wmem_max = 0;
  if (!(wmem >> wmem_max)) GTEST_SKIP() << "no /proc/sys/net/core/wmem_max";
  const std::string dir = ::testing::TempDir();
  const std::string ours = dir + "/augmentd-sb-ours.sock", other = dir + "/augmentd-sb-other.sock";
  const int listener = Listen(ours), other_listener = Listen(other);
  ASSERT_GE(listener, 0);
  ASSERT_GE(other_listener, 0);
  const int client = Connect(ours), other_client = Connect(other);
  ASSERT_GE(client, 0);
  ASSERT_GE(other_client, 0);
  const int accepted = accept(listener, nullptr, nullptr), other_accepted = accept(other_listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  ASSERT_GE(other_accepted, 0);
  const int before = SendBuffer(accepted);

  EXPECT_EQ(WidenUnixConnections({ours}, 0), 0);  // off
  EXPECT_EQ(SendBuffer(accepted), before);
  const int want = 1 << 20;
  EXPECT_EQ(WidenUnixConnections({ours}, want), 1);  // the accepted connection; not the listener, not the client
  EXPECT_EQ(SendBuffer(accepted), std::max(before, 2 * std::min(want, wmem_max)));
  EXPECT_EQ(SendBuffer(client), before);          // its local address is unnamed
  EXPECT_EQ(SendBuffer(other_accepted), before);  // another path
  EXPECT_EQ(SendBuffer(listener), before);
  EXPECT_EQ(WidenUnixConnections({"//" + ours}, want), 1);  // idempotent; "///tmp/x" names "/tmp/x"
  EXPECT_EQ(WidenUnixConnections({dir + "/none.sock"}, want), 0);
  EXPECT_EQ(WidenUnixConnections({}, want), 0);

  for (int fd : {client, other_client, accepted, other_accepted, listener, other_listener}) close(fd);
  unlink(ours.c_str());
  unlink(other.c_str());
}

}  // namespace
}  // namespace augmentd
