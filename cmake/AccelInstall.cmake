# SPDX-License-Identifier: MIT
# Install rules for the package as a whole, included at the end of the
# top-level CMakeLists.txt once every target exists. The targets install
# themselves (libaccel, headers, plugins, tools); this file adds what
# consumers use to find them:
#   ${libdir}/cmake/accel/   find_package(accel) -> accel::accel, accel::plugin
#   ${libdir}/pkgconfig/     accel.pc, accel-plugin.pc (with `plugindir`)
# Installed tools set their own INSTALL_RPATH ($ORIGIN/../lib), so they run
# from any prefix without LD_LIBRARY_PATH; tests/install checks that.
include(CMakePackageConfigHelpers)

set(ACCEL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/accel)
set(ACCEL_INSTALL_SDKDIR ${CMAKE_INSTALL_DATADIR}/accel/sdk)
set(ACCEL_INSTALL_CONFORMDIR ${CMAKE_INSTALL_DATADIR}/accel/conform)

# The SDK is an INTERFACE target (headers only); exporting it gives
# third-party plugin builds accel::plugin.
install(TARGETS accel_sdk EXPORT accelTargets)
install(EXPORT accelTargets
        NAMESPACE accel::
        DESTINATION ${ACCEL_INSTALL_CMAKEDIR}
        COMPONENT dev)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/accelConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/accelConfig.cmake
  INSTALL_DESTINATION ${ACCEL_INSTALL_CMAKEDIR}
  PATH_VARS ACCEL_INSTALL_PLUGINDIR CMAKE_INSTALL_INCLUDEDIR
            ACCEL_INSTALL_SDKDIR ACCEL_INSTALL_CONFORMDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/accelConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/accelConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/accelConfigVersion.cmake
        DESTINATION ${ACCEL_INSTALL_CMAKEDIR}
        COMPONENT dev)

# pkg-config files. They are relocatable: with a relative libdir, ${prefix}
# is found from the .pc file's own directory (${pcfiledir}/../.. for
# lib/pkgconfig), so a prefix that is moved or unpacked elsewhere still
# works. With an absolute libdir they are configured at install time, when
# CMAKE_INSTALL_PREFIX holds the real prefix (`cmake --install build
# --prefix P` may differ from the one seen at configure time). libdir and
# includedir stay relative to ${prefix} unless the GNUInstallDirs values
# are absolute.
function(accel_pc_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
accel_pc_dir(ACCEL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
accel_pc_dir(ACCEL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
accel_pc_dir(ACCEL_PC_DATADIR "${CMAKE_INSTALL_DATAROOTDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_accel_pc_dest "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(_accel_pc_prefix "")  # the install prefix, at install time
else()
  set(_accel_pc_dest "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  file(RELATIVE_PATH _accel_pc_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _accel_pc_up "${_accel_pc_up}")
  set(_accel_pc_prefix "\${pcfiledir}/${_accel_pc_up}")
endif()

foreach(pc accel accel-plugin)
  install(CODE "
    set(PROJECT_VERSION [[${PROJECT_VERSION}]])
    set(PROJECT_DESCRIPTION [[${PROJECT_DESCRIPTION}]])
    set(ACCEL_PC_LIBDIR [[${ACCEL_PC_LIBDIR}]])
    set(ACCEL_PC_INCLUDEDIR [[${ACCEL_PC_INCLUDEDIR}]])
    set(ACCEL_PC_DATADIR [[${ACCEL_PC_DATADIR}]])
    set(ACCEL_PC_PREFIX [[${_accel_pc_prefix}]])
    if(NOT ACCEL_PC_PREFIX)
      get_filename_component(ACCEL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\"
                             ABSOLUTE)
    endif()
    configure_file([[${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in]]
                   [[${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc]] @ONLY)
    file(INSTALL [[${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc]]
         DESTINATION \"${_accel_pc_dest}\")
    " COMPONENT dev)
endforeach()
