# augment/transforms/spatial/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU spatial.cc
  TESTS spatial_test.cc)
