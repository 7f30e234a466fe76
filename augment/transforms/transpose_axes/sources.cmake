# augment/transforms/transpose_axes/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU transpose_axes.cc
  TESTS transpose_axes_test.cc)
