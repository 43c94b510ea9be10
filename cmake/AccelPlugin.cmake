# SPDX-License-Identifier: MIT
# accel_add_plugin(<name> SOURCES <src>... [NO_INSTALL] [OUTPUT_DIRECTORY <dir>])
#
# Builds libaccel-<name>.so as a MODULE that links only the SDK headers
# (never libaccel), exports only accel_plugin_entry, and is written to the
# build tree's plugin folder (or OUTPUT_DIRECTORY, for test fixtures).
function(accel_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT P_OUTPUT_DIRECTORY)
    set(P_OUTPUT_DIRECTORY ${ACCEL_PLUGIN_OUTPUT_DIR})
  endif()
  set(target accel_${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE accel::sdk)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "accel-${name}"
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  # Undefined symbols would only show up at dlopen time; catch them at link
  # time instead (not under sanitizers, whose runtimes resolve late).
  if(NOT ACCEL_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,-z,defs)
  endif()
  if(NOT P_NO_INSTALL)
    # One install component per plugin, so each becomes its own Debian
    # package (cmake/AccelPackage.cmake): a fleet installs only its backends.
    install(TARGETS ${target} LIBRARY DESTINATION ${ACCEL_INSTALL_PLUGINDIR}
            COMPONENT plugin_${name})
  endif()
endfunction()
