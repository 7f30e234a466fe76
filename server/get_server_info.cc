// GetServerInfo: version, devices (live free memory), limits, supported transforms, presets, deliveries.
#include "server/adapter.h"
#include "server/cuda_ipc_slots.h"
#include "server/service.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::GetServerInfo(grpc::CallbackServerContext* context,
                                                            const v1::GetServerInfoRequest* /*request*/,
                                                            v1::GetServerInfoResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  v1::ServerInfo* info = response->mutable_info();
  info->set_version(AugmentdVersion());
  info->set_api_version("augmentd.v1");
  info->set_build(BuildDescription(context_.cuda_built));
  // Device enumeration is a handful of driver queries (no context creation, see augment/device.h).
  // Deliveries per device: inline and host shm everywhere; CUDA IPC on CUDA devices (server/delivery.h).
  bool have_gpu = false;
  for (const DeviceInfo& device : ListDevices()) {
    v1::Device* d = info->add_devices();
    *d = ToProto(device);
    d->add_deliveries(v1::DELIVERY_KIND_INLINE);
    d->add_deliveries(v1::DELIVERY_KIND_HOST_SHM);
    if (device.kind == DeviceKind::kCuda && CudaIpcBuilt()) {
      d->add_deliveries(v1::DELIVERY_KIND_CUDA_IPC);
      have_gpu = true;
    }
  }
  info->set_default_device(context_.default_device.name);
  *info->mutable_limits() = ToProto(context_.options.limits);
  for (v1::TransformSupport& t : TransformSupportList(EngineTransformNames(), EngineCudaTransformNames())) {
    *info->add_transforms() = std::move(t);
  }
  for (v1::Preset preset : EnginePresets()) info->add_presets(preset);
  for (const std::string& v : EngineBgv2Versions()) info->add_bgv2_versions(v);
  info->add_features("patch_chunks");  // StreamPatches: AugmentRequest.chunked_bytes + PatchChunk (server/patch_stream.cc)
  // The union over the devices.
  info->add_deliveries(v1::DELIVERY_KIND_INLINE);
  info->add_deliveries(v1::DELIVERY_KIND_HOST_SHM);
  if (have_gpu) info->add_deliveries(v1::DELIVERY_KIND_CUDA_IPC);
  for (v1::DType t : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) info->add_image_dtypes(t);
  for (v1::DType t : {v1::DTYPE_INT16, v1::DTYPE_INT8, v1::DTYPE_BOOL}) info->add_label_dtypes(t);

  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace augmentd
