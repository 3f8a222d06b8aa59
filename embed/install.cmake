# Installation and the CMake package, so that a host program can do
#   find_package(pxl REQUIRED)  target_link_libraries(app PRIVATE pxl::pxl)
# against an installed tree (cmake --install build --prefix DIR) or straight
# against the build tree (-Dpxl_DIR=<build dir>).
include(CMakePackageConfigHelpers)

install(TARGETS pxl_lib EXPORT pxlTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS pxl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/pxl/pxl.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pxl)
# The public header includes internal ones (lang/diag.hpp, runtime/array.hpp, ...).
foreach(dir lang ir runtime)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pxl/${dir}
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*.def")
endforeach()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pxl/stdlib
  FILES_MATCHING PATTERN "*.pxl")

set(PXL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pxl)
configure_package_config_file(${CMAKE_SOURCE_DIR}/embed/pxlConfig.cmake.in
  ${CMAKE_BINARY_DIR}/pxlConfig.cmake INSTALL_DESTINATION ${PXL_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pxlConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(EXPORT pxlTargets NAMESPACE pxl:: DESTINATION ${PXL_CMAKE_DIR})
install(FILES ${CMAKE_BINARY_DIR}/pxlConfig.cmake ${CMAKE_BINARY_DIR}/pxlConfigVersion.cmake
  DESTINATION ${PXL_CMAKE_DIR})
# The same package, usable from the build tree.
export(EXPORT pxlTargets NAMESPACE pxl:: FILE ${CMAKE_BINARY_DIR}/pxlTargets.cmake)
