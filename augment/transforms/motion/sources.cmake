# augment/transforms/motion/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU motion.cc
  TESTS motion_test.cc)
