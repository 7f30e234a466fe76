# augment/transforms/brightness_gradient_additive/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU brightness_gradient_additive.cc
  TESTS brightness_gradient_additive_test.cc)
