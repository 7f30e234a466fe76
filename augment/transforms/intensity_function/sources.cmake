# augment/transforms/intensity_function/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU intensity_function.cc
  TESTS intensity_function_test.cc)
