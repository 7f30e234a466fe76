# augment/transforms/random_convolution/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU random_convolution.cc
  TESTS random_convolution_test.cc)
