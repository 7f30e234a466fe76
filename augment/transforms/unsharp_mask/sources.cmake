# augment/transforms/unsharp_mask/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU unsharp_mask.cc
  CUDA unsharp_mask_cuda.cc
  TESTS unsharp_mask_test.cc)
