# augment/transforms/gamma/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU gamma.cc
  CUDA gamma_cuda.cc
  TESTS gamma_test.cc)
