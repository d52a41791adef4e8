# The CMake package beside canal.pc: find_package(canal) and the imported
# targets canal::canal (shared) and canal::canal_static, installed into
# <libdir>/cmake/canal. The same names exist inside this build (aliases),
# so examples/CMakeLists.txt builds both here and against an installed canal.
include(CMakePackageConfigHelpers)
add_library(canal::canal ALIAS canal)
add_library(canal::canal_static ALIAS canal_static)
# The targets are installed by src/CMakeLists.txt; this rule installs the
# same files again (same destination) to record them in the export set.
install(TARGETS canal canal_static EXPORT canalTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(CANAL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/canal)
install(EXPORT canalTargets NAMESPACE canal:: DESTINATION ${CANAL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/canalConfig.cmake.in
  ${CMAKE_BINARY_DIR}/canalConfig.cmake INSTALL_DESTINATION ${CANAL_CMAKE_DIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/canalConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/canalConfig.cmake ${CMAKE_BINARY_DIR}/canalConfigVersion.cmake
  DESTINATION ${CANAL_CMAKE_DIR})
