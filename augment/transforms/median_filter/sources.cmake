# augment/transforms/median_filter/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU median_filter.cc
  CUDA median_filter_cuda.cc
  TESTS median_filter_test.cc)
