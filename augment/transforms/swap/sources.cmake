# augment/transforms/swap/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU swap.cc
  CUDA swap_cuda.cc
  KERNELS swap.cu
  TESTS swap_test.cc)
