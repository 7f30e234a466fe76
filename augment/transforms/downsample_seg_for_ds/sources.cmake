# augment/transforms/downsample_seg_for_ds/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU downsample_seg_for_ds.cc
  TESTS downsample_seg_for_ds_test.cc)
