# augment/transforms/shape_crop/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU shape_crop.cc
  CUDA shape_crop_cuda.cc
  TESTS shape_crop_test.cc)
