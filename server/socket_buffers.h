// server/socket_buffers.h — larger kernel socket buffers on the server's same-host (unix socket) connections.
//
// A unix stream socket holds at most its sender's SO_SNDBUF (208 KiB by default): a ~27 MB inline batch back to a
// same-host client crosses in ~130 rounds of "write until EAGAIN, the client's poller wakes and reads, the
// server's poller wakes", and a larger buffer means fewer rounds (the client side of the same change took ~15 %
// off the request phase of a 103 MB patch batch: bench/results/2026-12-01-patch-inline-transport-cpu.md).
// gRPC 1.51 applies socket mutators to listening sockets only and an accepted unix socket does not inherit the
// listener's buffers, so the accepted connections are found in /proc/self/fd (Linux) when a stream starts.
#pragma once

#include <string>
#include <vector>

namespace augmentd {

// Asks for `bytes` of SO_SNDBUF and SO_RCVBUF on this process's connected unix stream sockets whose local address
// is one of `paths` (the unix listen paths; runs of '/' count as one: gRPC binds "unix:///p" as "///p") and that
// have less; the kernel caps the value at net.core.wmem_max / rmem_max. Returns how many such connections it found
// (0 when bytes <= 0, no /proc, or none). Best effort: a socket closed meanwhile or an option refused is skipped.
// Thread-safe (the descriptors are only queried and set, never closed).
int WidenUnixConnections(const std::vector<std::string>& paths, int bytes);

// The socket paths of the unix addresses among `listen` (ServerOptions::listen), as the server binds them.
std::vector<std::string> UnixListenPaths(const std::vector<std::string>& listen);

}  // namespace augmentd
