# augment/transforms/remove_label/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU remove_label.cc
  CUDA remove_label_cuda.cc
  TESTS remove_label_test.cc)
