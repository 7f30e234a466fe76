# augment/transforms/remove_random_connected_component/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU remove_random_connected_component.cc
  CUDA remove_random_connected_component_cuda.cc
  KERNELS remove_random_connected_component.cu
  TESTS remove_random_connected_component_test.cc)
