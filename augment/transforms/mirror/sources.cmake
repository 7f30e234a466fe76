# augment/transforms/mirror/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU mirror.cc
  TESTS mirror_test.cc)
