# augment/transforms/simulate_low_resolution/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU simulate_low_resolution.cc
  CUDA simulate_low_resolution_cuda.cc
  TESTS simulate_low_resolution_test.cc)
