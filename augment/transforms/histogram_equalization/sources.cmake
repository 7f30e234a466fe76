# augment/transforms/histogram_equalization/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU histogram_equalization.cc
  TESTS histogram_equalization_test.cc)
