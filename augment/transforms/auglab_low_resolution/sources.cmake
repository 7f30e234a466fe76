# augment/transforms/auglab_low_resolution/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_low_resolution.cc
  CUDA auglab_low_resolution_cuda.cc
  TESTS auglab_low_resolution_test.cc)
