# augment/transforms/apply_random_binary_operator/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU apply_random_binary_operator.cc
  CUDA apply_random_binary_operator_cuda.cc
  KERNELS apply_random_binary_operator.cu
  TESTS apply_random_binary_operator_test.cc)
