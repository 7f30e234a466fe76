// augmentd-health: a tiny grpc.health.v1 client for container HEALTHCHECKs and exec probes.
//
// The runtime image has no Python and grpc_health_probe is not packaged for Debian or PyPI, so this probe
// calls grpc.health.v1.Health/Check through gRPC's generic stub (raw bytes, no generated code) and decodes
// the one-field response by hand. It links only libgrpc++, which augmentd itself already needs.
//
// Usage:
//   augmentd-health [ADDRESS] [--service=NAME] [--timeout_s=SECONDS]
//   ADDRESS defaults to $AUGMENTD_HEALTH_ADDR, else 127.0.0.1:50051; unix:///path works too.
// Exit status: 0 SERVING; 1 NOT_SERVING/UNKNOWN/SERVICE_UNKNOWN or an RPC error; 2 bad usage.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

namespace {

constexpr char kMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckRequest { string service = 1; } in protobuf wire format.
std::string EncodeRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(static_cast<char>(0x0A));  // field 1, wire type 2 (length-delimited)
  uint64_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7F) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out + service;
}

// HealthCheckResponse { ServingStatus status = 1; } -> the status value (0 when absent, as proto3 says).
// Returns -1 on a malformed message.
int64_t DecodeStatus(const std::string& bytes) {
  int64_t status = 0;
  size_t i = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; i < bytes.size() && shift < 64; shift += 7) {
      const auto b = static_cast<uint8_t>(bytes[i++]);
      *v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (i < bytes.size()) {
    uint64_t key = 0, value = 0;
    if (!varint(&key)) return -1;
    switch (key & 7) {
      case 0:  // varint
        if (!varint(&value)) return -1;
        if ((key >> 3) == 1) status = static_cast<int64_t>(value);
        break;
      case 1: i += 8; break;
      case 5: i += 4; break;
      case 2:
        if (!varint(&value) || value > bytes.size() - i) return -1;
        i += value;
        break;
      default: return -1;
    }
  }
  return i == bytes.size() ? status : -1;
}

const char* StatusName(int64_t s) {
  switch (s) {
    case 0: return "UNKNOWN";
    case 1: return "SERVING";
    case 2: return "NOT_SERVING";
    case 3: return "SERVICE_UNKNOWN";
    default: return "INVALID";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_addr = std::getenv("AUGMENTD_HEALTH_ADDR");
  std::string address = env_addr && *env_addr ? env_addr : "127.0.0.1:50051";
  std::string service;
  double timeout_s = 3.0;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--service=", 0) == 0) {
      service = arg.substr(10);
    } else if (arg.rfind("--timeout_s=", 0) == 0) {
      timeout_s = std::atof(arg.c_str() + 12);
    } else if (arg == "-h" || arg == "--help") {
      std::cout << "usage: augmentd-health [ADDRESS] [--service=NAME] [--timeout_s=SECONDS]\n"
                   "Calls grpc.health.v1.Health/Check; exit 0 only when the answer is SERVING.\n"
                   "ADDRESS defaults to $AUGMENTD_HEALTH_ADDR, else 127.0.0.1:50051 (unix:///path works).\n";
      return 0;
    } else if (!arg.empty() && arg[0] != '-') {
      address = arg;
    } else {
      std::cerr << "augmentd-health: unknown argument " << arg << " (try --help)\n";
      return 2;
    }
  }
  if (timeout_s <= 0) timeout_s = 3.0;

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  const std::string request_bytes = EncodeRequest(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status rpc_status;
  stub.UnaryCall(&context, kMethod, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    rpc_status = std::move(s);
    done = true;
    cv.notify_one();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  if (!rpc_status.ok()) {
    std::cerr << "augmentd-health: " << address << ": rpc failed: code " << rpc_status.error_code() << ": "
              << rpc_status.error_message() << "\n";
    return 1;
  }
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  const int64_t status = DecodeStatus(bytes);
  std::cout << address << (service.empty() ? "" : " service=" + service) << ": " << StatusName(status) << "\n";
  return status == 1 ? 0 : 1;
}
