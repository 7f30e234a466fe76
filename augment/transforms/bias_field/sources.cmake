# augment/transforms/bias_field/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU bias_field.cc
  CUDA bias_field_cuda.cc
  TESTS bias_field_test.cc)
