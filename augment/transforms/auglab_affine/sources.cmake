# augment/transforms/auglab_affine/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_affine.cc
  CUDA auglab_affine_cuda.cc
  KERNELS auglab_affine.cu
  TESTS auglab_affine_test.cc
  CUDA_TESTS auglab_affine_cuda_test.cc)
