# augment/transforms/anisotropy/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU anisotropy.cc
  TESTS anisotropy_test.cc)
