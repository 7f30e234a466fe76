# augment/transforms/mask_image/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU mask_image.cc
  CUDA mask_image_cuda.cc
  TESTS mask_image_test.cc)
