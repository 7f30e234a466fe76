# augment/transforms/brightness_additive/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU brightness_additive.cc
  CUDA brightness_additive_cuda.cc
  TESTS brightness_additive_test.cc)
