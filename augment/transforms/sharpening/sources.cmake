# augment/transforms/sharpening/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU sharpening.cc
  CUDA sharpening_cuda.cc
  TESTS sharpening_test.cc)
