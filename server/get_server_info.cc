// GetServerInfo: version, devices (live free memory), limits, supported transforms, presets, deliveries.
#include "server/adapter.h"
#include "server/service.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::GetServerInfo(grpc::CallbackServerContext* context,
                                                            const v1::GetServerInfoRequest* /*request*/,
                                                            v1::GetServerInfoResponse* response) {
  v1::ServerInfo* info = response->mutable_info();
  info->set_version(AugmentdVersion());
  info->set_api_version("augmentd.v1");
  info->set_build(BuildDescription(context_.cuda_built));
  // Device enumeration is a handful of driver queries (no context creation, see augment/device.h).
  bool have_gpu = false;
  for (const DeviceInfo& device : ListDevices()) {
    *info->add_devices() = ToProto(device);
    have_gpu = have_gpu || device.kind == DeviceKind::kCuda;
  }
  info->set_default_device(context_.default_device.name);
  *info->mutable_limits() = ToProto(context_.options.limits);
  for (v1::TransformSupport& t : TransformSupportList(EngineTransformNames(), EngineCudaTransformNames())) {
    *info->add_transforms() = std::move(t);
  }
  for (v1::Preset preset : EnginePresets()) info->add_presets(preset);
  // Only what sessions can actually use today (HOST_SHM / CUDA_IPC delivery: issue 5, not wired yet).
  info->add_deliveries(v1::DELIVERY_KIND_INLINE);
  (void)have_gpu;
  for (v1::DType t : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) info->add_image_dtypes(t);
  for (v1::DType t : {v1::DTYPE_INT16, v1::DTYPE_INT8, v1::DTYPE_BOOL}) info->add_label_dtypes(t);

  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace augmentd
