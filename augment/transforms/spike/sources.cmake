# augment/transforms/spike/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU spike.cc)
