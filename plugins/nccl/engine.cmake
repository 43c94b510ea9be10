# SPDX-License-Identifier: MIT
# The NCCL and RCCL engines are one source (plugins/nccl) built twice.
include_guard(GLOBAL)
# accel_add_nccl_engine(<target> <output name> [definitions...])
function(accel_add_nccl_engine target output)
  set(_src ${PROJECT_SOURCE_DIR}/plugins/nccl)
  add_library(${target} MODULE ${_src}/plugin.c ${_src}/lib.c
    ${_src}/init.c ${_src}/comm.c)
  target_link_libraries(${target} PRIVATE accel::sdk Threads::Threads
    ${CMAKE_DL_LIBS})
  target_compile_definitions(${target} PRIVATE
    ACCEL_NCCL_VERSION="${PROJECT_VERSION}" ${ARGN})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME ${output}
    LIBRARY_OUTPUT_DIRECTORY ${ACCEL_PLUGIN_OUTPUT_DIR}/comm)
  if(NOT ACCEL_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,-z,defs)
  endif()
  install(TARGETS ${target}
    LIBRARY DESTINATION ${ACCEL_INSTALL_PLUGINDIR}/comm COMPONENT runtime)
endfunction()

