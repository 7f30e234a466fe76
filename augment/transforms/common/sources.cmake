# augment/transforms/common/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU auglab_common.cc auglab_region.cc common.cc local_kernel.cc mri_common.cc one_hot_channels.cc sitk_resample.cc
  TESTS auglab_region_test.cc mri_kspace_test.cc)
