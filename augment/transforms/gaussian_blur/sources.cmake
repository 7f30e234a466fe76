# augment/transforms/gaussian_blur/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU gaussian_blur.cc
  CUDA gaussian_blur_cuda.cc
  TESTS gaussian_blur_test.cc)
