# augment/transforms/elastic_deformation/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU elastic_deformation.cc
  CUDA elastic_deformation_cuda.cc
  TESTS elastic_deformation_test.cc)
