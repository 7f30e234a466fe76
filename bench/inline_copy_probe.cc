// inline_copy_probe: what the server's protobuf copies of inline patch mode cost against the bytes at memory speed
// (issue 22), in one process, no transport. Two parts, each in rounds alternating its alternatives:
//  * request: a 103.4 MB batch in 4 MiB PatchChunk messages, each a grpc::ByteBuffer of --slice byte slices (as
//    gRPC hands them to a reactor). "protobuf": StreamPatches today — SerializationTraits::Deserialize into the
//    reused StreamBatchesRequest (a copy into chunk.data), then a memcpy into the batch buffer. "slices": what a raw
//    ByteBuffer reader with a hand parser would do — the bytes copied from the slices into the batch buffer.
//  * answer: a 25.2 MB StreamBatchesResponse (image + one target inline): SerializationTraits::Serialize (gRPC's
//    copy into a slice, in StartWrite after sent_unix_ns) against a memcpy of the same bytes.
// Malloc tuned as the server does (server/main.cc) unless AUGMENTD_MALLOC_TUNING=0. Usage:
//   build/bench/inline_copy_probe [--slice BYTES] [--rounds N]
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include "augmentd/v1/batch.pb.h"
#include "bench/bench_args.h"

namespace {

using Request = augmentd::v1::StreamBatchesRequest;
using Response = augmentd::v1::StreamBatchesResponse;

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  size_t slice = 16384;
  int rounds = 15;
  for (int i = 1; i < argc; i += 2) {  // every option takes a value: the whole number, in range (bench_args.h)
    const std::string flag = argv[i];
    const bool has = i + 1 < argc;
    if (flag == "--slice" && has) {
      if (!augmentd::bench::ParseInteger("--slice", argv[i + 1], 1, int64_t{1} << 32, slice)) return 2;
    } else if (flag == "--rounds" && has) {
      if (!augmentd::bench::ParseInteger("--rounds", argv[i + 1], 1, 1000000, rounds)) return 2;
    } else {
      std::fprintf(stderr, "usage: %s [--slice BYTES] [--rounds N]\n", argv[0]);
      return flag == "--help" || flag == "-h" ? 0 : 2;
    }
  }
  const char* tuning = std::getenv("AUGMENTD_MALLOC_TUNING");
  const bool tune = tuning == nullptr || std::string(tuning) != "0";
  if (tune) {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_ARENA_MAX, 1);
  }

  // Request part.
  const size_t total = 103400000, chunk = size_t{4} << 20;
  std::vector<uint8_t> src(total), dst(total);
  for (size_t i = 0; i < total; ++i) src[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::vector<std::vector<grpc::Slice>> messages;
  std::vector<size_t> head_bytes;  // the message's bytes before chunk.data's first byte
  for (size_t off = 0; off < total; off += chunk) {
    Request r;
    r.mutable_chunk()->set_offset(off);
    r.mutable_chunk()->set_data(src.data() + off, std::min(chunk, total - off));
    const std::string s = r.SerializeAsString();
    std::vector<grpc::Slice> slices;
    for (size_t a = 0; a < s.size(); a += slice) slices.emplace_back(s.data() + a, std::min(slice, s.size() - a));
    messages.push_back(std::move(slices));
    head_bytes.push_back(s.size() - r.chunk().data().size());
  }
  Request message;  // reused, as the reactor's request_
  std::vector<double> parse_ms, slices_ms;
  for (int round = 0; round < rounds; ++round) {
    for (int mode = 0; mode < 2; ++mode) {
      std::memset(dst.data(), 0, total);
      const double t0 = NowMs();
      for (size_t m = 0; m < messages.size(); ++m) {
        grpc::ByteBuffer buffer(messages[m].data(), messages[m].size());
        if (mode == 0) {
          if (!grpc::SerializationTraits<Request>::Deserialize(&buffer, &message).ok()) return 1;
          const std::string& data = message.chunk().data();
          std::memcpy(dst.data() + message.chunk().offset(), data.data(), data.size());
        } else {
          std::vector<grpc::Slice> slices;
          if (!buffer.Dump(&slices).ok()) return 1;
          size_t skip = head_bytes[m], at = m * chunk;
          for (const grpc::Slice& s : slices) {
            const size_t k = std::min(skip, s.size());
            skip -= k;
            std::memcpy(dst.data() + at, s.begin() + k, s.size() - k);
            at += s.size() - k;
          }
        }
      }
      (mode == 0 ? parse_ms : slices_ms).push_back(NowMs() - t0);
      if (std::memcmp(src.data(), dst.data(), total) != 0) {
        std::fprintf(stderr, "request part: the batch buffer differs from the source (mode %d)\n", mode);
        return 1;
      }
    }
  }

  // Answer part.
  const size_t image = size_t{2} * 128 * 128 * 128 * 4, target = size_t{2} * 128 * 128 * 128 * 2;
  std::vector<uint8_t> a(image, 3), b(target, 5), out(image + target);
  std::vector<double> serialize_ms, memcpy_ms;
  for (int round = 0; round < rounds; ++round) {
    Response r;
    r.mutable_batch()->mutable_image()->set_inline_data(a.data(), image);
    r.mutable_batch()->add_targets()->set_inline_data(b.data(), target);
    grpc::ByteBuffer buffer;
    bool own = false;
    const double t0 = NowMs();
    if (!grpc::SerializationTraits<Response>::Serialize(r, &buffer, &own).ok()) return 1;
    const double t1 = NowMs();
    std::memcpy(out.data(), a.data(), image);
    std::memcpy(out.data() + image, b.data(), target);
    memcpy_ms.push_back(NowMs() - t1);
    serialize_ms.push_back(t1 - t0);
    if (buffer.Length() < image + target) return 1;
  }

  std::printf("malloc tuning %s, %d rounds\n", tune ? "on" : "off", rounds);
  std::printf("request %.1f MB in 4 MiB chunks, %zu-byte slices: protobuf parse + copy median %.2f ms (min %.2f), "
              "slices -> buffer median %.2f ms (min %.2f): the protobuf copy costs %.2f ms per batch\n",
              total / 1e6, slice, Median(parse_ms), Min(parse_ms), Median(slices_ms), Min(slices_ms),
              Median(parse_ms) - Median(slices_ms));
  std::printf("answer %.1f MB: gRPC Serialize median %.2f ms (min %.2f), memcpy median %.2f ms (min %.2f)\n",
              (image + target) / 1e6, Median(serialize_ms), Min(serialize_ms), Median(memcpy_ms), Min(memcpy_ms));
  return 0;
}
