# augment/transforms/rot90/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU rot90.cc
  TESTS rot90_test.cc)
