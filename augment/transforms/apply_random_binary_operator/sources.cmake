# augment/transforms/apply_random_binary_operator/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU apply_random_binary_operator.cc
  TESTS apply_random_binary_operator_test.cc)
