# augment/transforms/contrast/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU contrast.cc
  CUDA contrast_cuda.cc
  TESTS contrast_test.cc)
