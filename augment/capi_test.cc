// Exercises the C ABI from C++ (the Python parity tests use it through ctypes).
#include "augment/capi.h"
#include "augment/transform.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

nlohmann::json Tensor(const void* p, const char* dtype, std::vector<int64_t> shape) {
  return {{"data", reinterpret_cast<uintptr_t>(p)}, {"dtype", dtype}, {"shape", shape}};
}

TEST(Capi, RegistryAndErrors) {
  augmentd_result* r = augmentd_run_json(R"({"op": "registry"})");
  ASSERT_TRUE(augmentd_result_ok(r));
  // default trainer (12) + DA5 (9) + MRI artefacts (4) + ...: one per TransformKind
  EXPECT_EQ(nlohmann::json::parse(augmentd_result_json(r))["transforms"].size(),
            static_cast<size_t>(augmentd::kNumTransformKinds));
  augmentd_result_free(r);
  r = augmentd_run_json("not json");
  EXPECT_FALSE(augmentd_result_ok(r));
  EXPECT_EQ(std::string(augmentd_result_error(r)).rfind("INVALID_ARGUMENT: request", 0), 0u);
  augmentd_result_free(r);
  const std::string deep = R"({"op": "registry", "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  r = augmentd_run_json(deep.c_str());  // hostile nesting: rejected without recursion
  EXPECT_FALSE(augmentd_result_ok(r));
  EXPECT_NE(std::string(augmentd_result_error(r)).find("nested deeper"), std::string::npos);
  augmentd_result_free(r);
  r = augmentd_run_json(nullptr);
  EXPECT_FALSE(augmentd_result_ok(r));
  augmentd_result_free(r);
  augmentd_result_free(nullptr);
}

TEST(Capi, ApplyTransformReturnsTensors) {
  std::vector<float> img(2 * 4 * 5 * 6);
  for (size_t i = 0; i < img.size(); ++i) img[i] = 0.5f + static_cast<float>(i % 17);
  std::vector<int16_t> seg(4 * 5 * 6);
  for (size_t i = 0; i < seg.size(); ++i) seg[i] = static_cast<int16_t>(i % 3) - 1;
  nlohmann::json req = {{"op", "apply_transform"},
                        {"transform", {{"kind", "mirror"}, {"config", {{"allowed_axes", {0, 1, 2}}}}}},
                        {"params", {{"axes", {2}}}},
                        {"image", Tensor(img.data(), "float32", {2, 4, 5, 6})},
                        {"seg", Tensor(seg.data(), "int16", {1, 4, 5, 6})}};
  augmentd_result* r = augmentd_run_json(req.dump().c_str());
  ASSERT_TRUE(augmentd_result_ok(r)) << augmentd_result_error(r);
  ASSERT_EQ(augmentd_result_num_tensors(r), 2);
  EXPECT_STREQ(augmentd_result_tensor_name(r, 0), "image");
  EXPECT_STREQ(augmentd_result_tensor_dtype(r, 1), "int16");
  ASSERT_EQ(augmentd_result_tensor_ndim(r, 0), 4);
  EXPECT_EQ(augmentd_result_tensor_shape(r, 0)[3], 6);
  const float* out = static_cast<const float*>(augmentd_result_tensor_data(r, 0));
  EXPECT_EQ(out[0], img[5]);
  EXPECT_EQ(augmentd_result_tensor_data(r, 7), nullptr);
  augmentd_result_free(r);
}

}  // namespace
