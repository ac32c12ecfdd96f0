# Finds the single-threaded ZooKeeper C client (Debian: libzookeeper-st-dev).
# Defines the imported target ZooKeeperST::ZooKeeperST.
find_path(ZooKeeperST_INCLUDE_DIR zookeeper/zookeeper.h)
find_library(ZooKeeperST_LIBRARY zookeeper_st)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeperST REQUIRED_VARS ZooKeeperST_LIBRARY ZooKeeperST_INCLUDE_DIR)
if(ZooKeeperST_FOUND AND NOT TARGET ZooKeeperST::ZooKeeperST)
  add_library(ZooKeeperST::ZooKeeperST UNKNOWN IMPORTED)
  set_target_properties(ZooKeeperST::ZooKeeperST PROPERTIES
    IMPORTED_LOCATION "${ZooKeeperST_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ZooKeeperST_INCLUDE_DIR}")
endif()
mark_as_advanced(ZooKeeperST_INCLUDE_DIR ZooKeeperST_LIBRARY)
