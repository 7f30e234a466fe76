# augment/transforms/rician_noise/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU rician_noise.cc
  CUDA rician_noise_cuda.cc
  TESTS rician_noise_test.cc)
