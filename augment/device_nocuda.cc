// augment/device_nocuda.cc — ListCudaDevices() for builds without CUDA: there are none.
#include "augment/device.h"

namespace augmentd {

std::vector<DeviceInfo> ListCudaDevices() { return {}; }

}  // namespace augmentd
