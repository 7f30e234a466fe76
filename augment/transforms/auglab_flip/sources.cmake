# augment/transforms/auglab_flip/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_flip.cc
  CUDA auglab_flip_cuda.cc
  TESTS auglab_flip_test.cc
  CUDA_TESTS auglab_flip_cuda_test.cc)
