# augment/transforms/auglab_bias_field/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_bias_field.cc
  TESTS auglab_bias_field_test.cc)
