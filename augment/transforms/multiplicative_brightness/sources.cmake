# augment/transforms/multiplicative_brightness/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU multiplicative_brightness.cc
  CUDA multiplicative_brightness_cuda.cc
  TESTS multiplicative_brightness_test.cc)
