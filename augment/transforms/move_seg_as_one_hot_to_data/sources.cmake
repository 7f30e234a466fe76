# augment/transforms/move_seg_as_one_hot_to_data/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU move_seg_as_one_hot_to_data.cc
  CUDA move_seg_as_one_hot_to_data_cuda.cc
  KERNELS move_seg_as_one_hot_to_data.cu
  TESTS move_seg_as_one_hot_to_data_test.cc)
