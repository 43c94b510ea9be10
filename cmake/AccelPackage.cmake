# SPDX-License-Identifier: MIT
# Man pages and binary packages, included at the end of the top-level
# CMakeLists.txt after the install rules.
#
# `cpack -G DEB` (in the build directory) makes one Debian package per
# install component:
#   accel                  libaccel, accel-info, accel-conform and its test
#                          kernels, accel-bench, the man pages (runtime)
#   accel-dev              headers, CMake package, pkg-config files and the
#                          plugin SDK under share/accel/sdk (dev)
#   accel-plugin-<name>    one per plugin (plugin_<name>), depending on
#                          accel, so a fleet installs only the backends it
#                          needs
# Other components get accel-<component>. Runtime libraries the GPU
# plugins load (CUDA, HIP, OpenCL) are found with dlopen at run time and
# are not package dependencies: a plugin without its driver reports
# itself unavailable. tests/conform/package_test.sh (CTest
# conform_install_packages) builds the packages and runs the tools from
# their unpacked files; tests/conform/package_install.sh (.ci/run's last
# stage, packages) installs them with dpkg, runs the tools from /usr and
# removes them again.

install(FILES ${PROJECT_SOURCE_DIR}/docs/man/accel-info.1
              ${PROJECT_SOURCE_DIR}/docs/man/accel-conform.1
              ${PROJECT_SOURCE_DIR}/docs/man/accel-bench.1
              ${PROJECT_SOURCE_DIR}/docs/man/accel-memviz.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)

set(CPACK_PACKAGE_NAME accel)
set(CPACK_PACKAGE_VENDOR "accel")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "accel maintainers <accel@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)  # libc, libm, libpthread only
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME accel)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME accel-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "accel (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The Python package (ctypes) and the extra tools load libaccel too.
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "accel (= ${PROJECT_VERSION}), python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "accel (= ${PROJECT_VERSION})")
foreach(_plugin IN LISTS ACCEL_PLUGINS ITEMS template)
  string(TOUPPER "plugin_${_plugin}" _upper)
  set(CPACK_DEBIAN_${_upper}_PACKAGE_NAME accel-plugin-${_plugin})
  set(CPACK_DEBIAN_${_upper}_PACKAGE_DEPENDS "accel (= ${PROJECT_VERSION})")
endforeach()
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "accel library and tools (accel-info, accel-conform, accel-bench)")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "accel development files and plugin SDK (template, guide, examples)")
include(CPack)
