# augment/transforms/auglab_bias_field/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_bias_field.cc
  CUDA auglab_bias_field_cuda.cc
  TESTS auglab_bias_field_test.cc)
