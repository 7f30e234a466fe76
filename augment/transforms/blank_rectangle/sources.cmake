# augment/transforms/blank_rectangle/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU blank_rectangle.cc
  CUDA blank_rectangle_cuda.cc
  TESTS blank_rectangle_test.cc)
