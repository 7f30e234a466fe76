#include "client/client.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace augmentd {
namespace {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// The health messages are tiny; encoding them by hand avoids linking a second copy of health.proto
// (the server's health service is built into gRPC).
//   HealthCheckRequest  { string service = 1; }
//   HealthCheckResponse { ServingStatus status = 1; }
std::string EncodeHealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);  // flushes into `out` when destroyed
    coded.WriteTag((1 << 3) | 2);
    coded.WriteVarint32(static_cast<uint32_t>(service.size()));
    coded.WriteString(service);
  }
  return out;
}

absl::StatusOr<HealthStatus> DecodeHealthResponse(const std::string& bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  uint32_t status = 0;
  while (uint32_t tag = in.ReadTag()) {
    if (tag == ((1 << 3) | 0)) {
      if (!in.ReadVarint32(&status)) return absl::DataLossError("malformed HealthCheckResponse");
    } else if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) {
      return absl::DataLossError("malformed HealthCheckResponse");
    }
  }
  if (status > 3) return absl::DataLossError(absl::StrCat("unknown health status ", status));
  return static_cast<HealthStatus>(status);
}

}  // namespace

Client::Client(std::string target, std::shared_ptr<grpc::Channel> channel)
    : target_(std::move(target)),
      channel_(std::move(channel)),
      stub_(::augmentd::v1::AugmentService::NewStub(channel_)) {}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& target, absl::Duration timeout) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // the server bounds what it sends (ServerLimits.max_response_bytes)
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to augmentd at '", target, "' within ", absl::FormatDuration(timeout)));
  }
  return std::unique_ptr<Client>(new Client(target, std::move(channel)));
}

absl::StatusOr<::augmentd::v1::ServerInfo> Client::GetServerInfo(absl::Duration deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  ::augmentd::v1::GetServerInfoResponse response;
  const grpc::Status status = stub_->GetServerInfo(&context, ::augmentd::v1::GetServerInfoRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return std::move(*response.mutable_info());
}

absl::StatusOr<HealthStatus> Client::CheckHealth(const std::string& service, absl::Duration deadline) {
  grpc::GenericStub generic(channel_);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  const std::string request_bytes = EncodeHealthRequest(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Notification done;
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      status = std::move(s);
                      done.Notify();
                    });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpc(status);
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::DataLossError("unreadable HealthCheckResponse");
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return DecodeHealthResponse(bytes);
}

}  // namespace augmentd
