# augment/transforms/local_gamma/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU local_gamma.cc
  TESTS local_gamma_test.cc)
