# augment/transforms/zscore_normalization/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU zscore_normalization.cc
  CUDA zscore_normalization_cuda.cc
  TESTS zscore_normalization_test.cc)
