# augment/transforms/clamp/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU clamp.cc
  CUDA clamp_cuda.cc
  TESTS clamp_test.cc)
