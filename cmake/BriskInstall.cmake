# Install rules: libbrisk.so, the public headers, the `brisk` tool, an exported brisk::brisk target with
# brisk-config.cmake, and brisk.pc for pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS brisk EXPORT brisk-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS brisk_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# core/internal/ is the library's own (no public header includes it); batch/internal/ and cache/internal/ are
# installed because the header-only Batcher<> and Cache<> templates include them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/brisk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  PATTERN "core/internal" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/capi/brisk.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT brisk-targets NAMESPACE brisk:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/brisk)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/brisk-config.cmake.in
  ${PROJECT_BINARY_DIR}/brisk-config.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/brisk)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/brisk-config-version.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/brisk-config.cmake ${PROJECT_BINARY_DIR}/brisk-config-version.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/brisk)

# Relative to the .pc file, so an installed tree can be moved (or installed with --prefix).
file(RELATIVE_PATH BRISK_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/brisk.pc.in ${PROJECT_BINARY_DIR}/brisk.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/brisk.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
