# augment/transforms/remove_random_connected_component/: its files (collected by augment/CMakeLists.txt).
augment_transform_sources(
  CPU remove_random_connected_component.cc
  TESTS remove_random_connected_component_test.cc)
