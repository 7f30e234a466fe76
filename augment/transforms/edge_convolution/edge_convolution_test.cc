#include "augment/transforms/edge_convolution/edge_convolution.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(EdgeConvolution, LaplaceOfAConstantIsZeroAndOfARampIsZeroInside) {
  SampleData s = testing::RandomSample(1, {6, 7, 8});
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) s.image[i] = static_cast<float>(i % 8);  // linear along axis 2
  ASSERT_TRUE((*EdgeConvolutionTransform::Create({}))->Apply(EmptyParams(), s).ok());
  for (int a = 1; a < 5; ++a)
    for (int b = 1; b < 6; ++b)
      for (int c = 1; c < 7; ++c) EXPECT_EQ(s.image[(a * 7 + b) * 8 + c], 0.0f) << a << b << c;  // 26x − Σ neighbours
}

TEST(EdgeConvolution, ScharrOfARampAlongAxisTwo) {
  SampleData s = testing::RandomSample(1, {5, 6, 7});
  for (int64_t i = 0; i < s.voxels(); ++i) s.image[i] = 2.0f * static_cast<float>(i % 7);
  EdgeConvolutionConfig c;
  c.kernel_type = "scharr";
  ASSERT_TRUE((*EdgeConvolutionTransform::Create(c))->Apply(EmptyParams(), s).ok());
  // kernel_x: (x[i−1] − x[i+1])·Σw = (−4)·256 inside; the other two derivatives vanish.
  EXPECT_EQ(s.image[(2 * 6 + 3) * 7 + 3], -1024.0f);
  c.absolute = true;
  SampleData t = testing::RandomSample(1, {5, 6, 7});
  for (int64_t i = 0; i < t.voxels(); ++i) t.image[i] = 2.0f * static_cast<float>(i % 7);
  ASSERT_TRUE((*EdgeConvolutionTransform::Create(c))->Apply(EmptyParams(), t).ok());
  EXPECT_EQ(t.image[(2 * 6 + 3) * 7 + 3], 1024.0f);
  EXPECT_EQ(EdgeConvolutionTransform::FromJson({{"kernel_type", "sobel"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
