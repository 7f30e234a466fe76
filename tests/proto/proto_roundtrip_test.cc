// Contract tests of proto/augmentd/v1: every message kind of the package survives binary, text and JSON
// round trips with non-default values in every field and every oneof member; the transform enum and the
// TransformSpec.params oneof stay in step. The message list comes from the descriptors (files imported by
// service.proto), so a message added to the contract is covered without touching this test.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "augmentd/v1/service.grpc.pb.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kPackage[] = "augmentd.v1";

// service.proto, looked up in the generated pool. Taking the address of its descriptor table keeps the
// generated object file in the link (service.proto declares no message a test would otherwise touch).
const google::protobuf::ServiceDescriptor* AugmentServiceDescriptor() {
  static const void* volatile keep_linked = &descriptor_table_augmentd_2fv1_2fservice_2eproto;
  (void)keep_linked;
  return google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("augmentd.v1.AugmentService");
}

// Every file of the package reachable from service.proto.
std::vector<const FileDescriptor*> ContractFiles() {
  std::vector<const FileDescriptor*> files;
  const google::protobuf::ServiceDescriptor* service = AugmentServiceDescriptor();
  if (service == nullptr) return {};
  std::vector<const FileDescriptor*> todo{service->file()};
  std::set<const FileDescriptor*> seen;
  while (!todo.empty()) {
    const FileDescriptor* f = todo.back();
    todo.pop_back();
    if (!seen.insert(f).second || f->package() != kPackage) continue;
    files.push_back(f);
    for (int i = 0; i < f->dependency_count(); ++i) todo.push_back(f->dependency(i));
  }
  return files;
}

void CollectMessages(const Descriptor* d, std::vector<const Descriptor*>* out) {
  if (d->options().map_entry()) return;
  out->push_back(d);
  for (int i = 0; i < d->nested_type_count(); ++i) CollectMessages(d->nested_type(i), out);
}

std::vector<const Descriptor*> ContractMessages() {
  std::vector<const Descriptor*> messages;
  for (const FileDescriptor* f : ContractFiles()) {
    for (int i = 0; i < f->message_type_count(); ++i) CollectMessages(f->message_type(i), &messages);
  }
  return messages;
}

// Largest number of members of a real (non-synthetic) oneof of `d`: the number of variants needed so that
// every oneof member is set in at least one of them.
int VariantCount(const Descriptor* d) {
  int n = 1;
  for (int i = 0; i < d->oneof_decl_count(); ++i) {
    if (!d->oneof_decl(i)->is_synthetic()) n = std::max(n, d->oneof_decl(i)->field_count());
  }
  return n;
}

// Sets every field of `m` to a non-default value derived from `seed`; for each oneof, member
// (variant % size). Nested messages are filled up to `depth` levels.
void Fill(Message* m, int variant, int seed, int depth) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (const auto* oneof = f->real_containing_oneof(); oneof != nullptr) {
      if (oneof->field(variant % oneof->field_count()) != f) continue;
    }
    const int v = seed + i + 1;  // non-zero, differs per field
    const int copies = f->is_repeated() ? 2 : 1;
    for (int k = 0; k < copies; ++k) {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          rep ? r->AddInt32(m, f, -v - k) : r->SetInt32(m, f, -v);
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          rep ? r->AddInt64(m, f, -(int64_t{1} << 40) - v - k) : r->SetInt64(m, f, -(int64_t{1} << 40) - v);
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          rep ? r->AddUInt32(m, f, 4000000000u - v - k) : r->SetUInt32(m, f, 4000000000u - v);
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          rep ? r->AddUInt64(m, f, (uint64_t{1} << 60) + v + k) : r->SetUInt64(m, f, (uint64_t{1} << 60) + v);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          rep ? r->AddDouble(m, f, 0.25 + v + k) : r->SetDouble(m, f, 0.25 + v);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          rep ? r->AddFloat(m, f, 0.5f + v + k) : r->SetFloat(m, f, 0.5f + v);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          rep ? r->AddBool(m, f, k == 0) : r->SetBool(m, f, true);
          break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          const EnumDescriptor* e = f->enum_type();
          const auto* value = e->value(1 + (v + k) % (e->value_count() - 1));  // never the 0 value
          rep ? r->AddEnum(m, f, value) : r->SetEnum(m, f, value);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
          std::string s = f->type() == FieldDescriptor::TYPE_BYTES ? std::string("\x00\xff\x7f", 3) : "é-";
          s += f->name() + "-" + std::to_string(v + k);
          rep ? r->AddString(m, f, s) : r->SetString(m, f, s);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth <= 0) break;
          Fill(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), variant, seed + 100 * (i + 1), depth - 1);
          break;
      }
    }
  }
}

// Every field that Fill set (at top level) must still be set.
void ExpectAllSet(const Message& m, int variant) {
  const Descriptor* d = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (const auto* oneof = f->real_containing_oneof(); oneof != nullptr) {
      if (oneof->field(variant % oneof->field_count()) != f) continue;
    }
    if (f->is_repeated()) {
      EXPECT_EQ(r->FieldSize(m, f), 2) << f->full_name();
    } else {
      EXPECT_TRUE(r->HasField(m, f)) << f->full_name();
    }
  }
}

std::string Diff(const Message& a, const Message& b) {
  std::string report;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&report);
  differ.Compare(a, b);
  return report;
}

TEST(ProtoContractTest, WalksTheWholePackage) {
  const std::vector<const Descriptor*> messages = ContractMessages();
  std::set<std::string> names;
  for (const Descriptor* d : messages) names.insert(d->full_name());
  // Spot checks that the walk really reaches every file of the contract.
  for (const char* name :
       {"augmentd.v1.Tensor", "augmentd.v1.CudaIpcRegion", "augmentd.v1.SpatialParams", "augmentd.v1.PipelineSpec",
        "augmentd.v1.TrainerConfig", "augmentd.v1.ServerInfo", "augmentd.v1.SessionConfig", "augmentd.v1.Batch",
        "augmentd.v1.StreamBatchesRequest", "augmentd.v1.GetStatsResponse", "augmentd.v1.RicianNoiseParams"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_GE(messages.size(), 70u);  // 71 when written
  EXPECT_EQ(ContractFiles().size(), 6u);
}

TEST(ProtoContractTest, EveryMessageRoundTripsWithNonDefaultValues) {
  int checked = 0;
  for (const Descriptor* d : ContractMessages()) {
    const Message* prototype = google::protobuf::MessageFactory::generated_factory()->GetPrototype(d);
    ASSERT_NE(prototype, nullptr) << d->full_name();
    for (int variant = 0; variant < VariantCount(d); ++variant) {
      SCOPED_TRACE(d->full_name() + " variant " + std::to_string(variant));
      std::unique_ptr<Message> original(prototype->New());
      Fill(original.get(), variant, /*seed=*/variant * 7, /*depth=*/4);
      ExpectAllSet(*original, variant);
      if (d->field_count() > 0) {
        EXPECT_GT(original->ByteSizeLong(), 0u);
      }

      // Binary wire format.
      std::string wire;
      ASSERT_TRUE(original->SerializeToString(&wire));
      std::unique_ptr<Message> parsed(prototype->New());
      ASSERT_TRUE(parsed->ParseFromString(wire));
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*original, *parsed)) << Diff(*original, *parsed);
      ExpectAllSet(*parsed, variant);

      // Text format (logs, golden files).
      std::string text;
      ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(*original, &text));
      std::unique_ptr<Message> from_text(prototype->New());
      ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, from_text.get())) << text;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*original, *from_text));

      // JSON (the Python CLI's --json, config files).
      std::string json;
      ASSERT_TRUE(google::protobuf::util::MessageToJsonString(*original, &json).ok());
      std::unique_ptr<Message> from_json(prototype->New());
      ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, from_json.get()).ok()) << json;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*original, *from_json))
          << Diff(*original, *from_json);
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);  // 106 variants when written
}

TEST(ProtoContractTest, TransformKindsMatchTheParamsOneof) {
  // One TransformSpec.params member per transform kind, named like the engine registry key (lower-case
  // enum name): adding a transform means one enum value and one message, nothing else.
  const EnumDescriptor* kinds = augmentd::v1::TransformKind_descriptor();
  const auto* params = augmentd::v1::TransformSpec::descriptor()->FindOneofByName("params");
  ASSERT_NE(params, nullptr);
  std::set<std::string> members;
  for (int i = 0; i < params->field_count(); ++i) members.insert(params->field(i)->name());
  std::set<std::string> kind_names;
  for (int i = 0; i < kinds->value_count(); ++i) {
    if (kinds->value(i)->number() == 0) {
      EXPECT_EQ(kinds->value(i)->name(), "TRANSFORM_KIND_UNSPECIFIED");
      continue;
    }
    std::string lower = kinds->value(i)->name();
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    kind_names.insert(lower);
  }
  EXPECT_EQ(members, kind_names);
  for (const char* name : {"SPATIAL", "GAUSSIAN_NOISE", "GAUSSIAN_BLUR", "MULTIPLICATIVE_BRIGHTNESS", "CONTRAST",
                           "SIMULATE_LOW_RESOLUTION", "GAMMA", "MIRROR", "MASK_IMAGE", "REMOVE_LABEL",
                           "CONVERT_SEGMENTATION_TO_REGIONS", "DOWNSAMPLE_SEG_FOR_DS", "ROT90", "TRANSPOSE_AXES",
                           "MEDIAN_FILTER", "BRIGHTNESS_ADDITIVE", "BLANK_RECTANGLE", "BRIGHTNESS_GRADIENT_ADDITIVE",
                           "LOCAL_GAMMA", "SHARPENING", "RICIAN_NOISE", "BIAS_FIELD", "GHOSTING", "SPIKE", "MOTION",
                           "HISTOGRAM_EQUALIZATION", "RANDOM_CONVOLUTION", "INTENSITY_FUNCTION", "ZSCORE_NORMALIZATION",
                           "CLAMP", "EDGE_CONVOLUTION", "UNSHARP_MASK", "SWAP", "SHAPE_CROP", "ANISOTROPY",
                           "TORCHIO_AFFINE", "ELASTIC_DEFORMATION", "MOVE_SEG_AS_ONE_HOT_TO_DATA",
                           "APPLY_RANDOM_BINARY_OPERATOR", "REMOVE_RANDOM_CONNECTED_COMPONENT", "AUGLAB_LOW_RESOLUTION",
                           "REDISTRIBUTE_SEG", "AUGLAB_BIAS_FIELD"}) {
    EXPECT_NE(kinds->FindValueByName(name), nullptr) << name;
  }
  // UNSPECIFIED + the 43 kinds of session 7 above + later ones (each with its oneof member: `members` above;
  // server/adapter_test.cc checks both against the engine's registry).
  EXPECT_GE(kinds->value_count(), 44);
}

TEST(ProtoContractTest, ServiceDeclaresTheV1Rpcs) {
  const auto* service = AugmentServiceDescriptor();
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->full_name(), "augmentd.v1.AugmentService");
  for (const char* rpc : {"GetServerInfo", "OpenSession", "CloseSession", "Augment", "StreamBatches", "GetStats"}) {
    EXPECT_NE(service->FindMethodByName(rpc), nullptr) << rpc;
  }
  const auto* stream = service->FindMethodByName("StreamBatches");
  ASSERT_NE(stream, nullptr);
  EXPECT_TRUE(stream->client_streaming());
  EXPECT_TRUE(stream->server_streaming());
}

TEST(ProtoContractTest, OptionalFieldsDistinguishUnsetFromZero) {
  // apply_probability unset means "always" (1), an explicit 0 means "never": presence must survive the wire.
  augmentd::v1::TransformSpec spec;
  spec.set_kind(augmentd::v1::GAMMA);
  spec.set_apply_probability(0.0);
  augmentd::v1::TransformSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(spec.SerializeAsString()));
  EXPECT_TRUE(parsed.has_apply_probability());
  EXPECT_EQ(parsed.apply_probability(), 0.0);
  spec.clear_apply_probability();
  ASSERT_TRUE(parsed.ParseFromString(spec.SerializeAsString()));
  EXPECT_FALSE(parsed.has_apply_probability());
}

}  // namespace
}  // namespace augmentd
