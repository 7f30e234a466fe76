# augment/transforms/torchio_affine/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU torchio_affine.cc
  CUDA torchio_affine_cuda.cc
  TESTS torchio_affine_test.cc)
