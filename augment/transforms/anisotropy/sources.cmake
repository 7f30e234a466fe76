# augment/transforms/anisotropy/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU anisotropy.cc
  CUDA anisotropy_cuda.cc
  TESTS anisotropy_test.cc)
