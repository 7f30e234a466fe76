# augment/transforms/ghosting/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU ghosting.cc)
