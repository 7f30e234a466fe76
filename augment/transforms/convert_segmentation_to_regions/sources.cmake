# augment/transforms/convert_segmentation_to_regions/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU convert_segmentation_to_regions.cc
  CUDA convert_segmentation_to_regions_cuda.cc
  TESTS convert_segmentation_to_regions_test.cc)
