# augment/transforms/redistribute_seg/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU redistribute_seg.cc
  CUDA redistribute_seg_cuda.cc
  KERNELS redistribute_seg.cu
  TESTS redistribute_seg_test.cc)
