# augment/transforms/swap/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU swap.cc
  TESTS swap_test.cc)
