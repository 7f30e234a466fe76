# augment/transforms/redistribute_seg/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU redistribute_seg.cc
  TESTS redistribute_seg_test.cc)
