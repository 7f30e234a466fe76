# augment/transforms/edge_convolution/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU edge_convolution.cc
  CUDA edge_convolution_cuda.cc
  TESTS edge_convolution_test.cc)
