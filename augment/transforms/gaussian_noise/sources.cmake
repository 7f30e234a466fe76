# augment/transforms/gaussian_noise/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU gaussian_noise.cc
  CUDA gaussian_noise_cuda.cc
  TESTS gaussian_noise_test.cc)
