# SPDX-License-Identifier: MIT
# The plugin author's path, end to end (run as `cmake -P` by CTest):
#  1. install this build tree into WORK_DIR/prefix;
#  2. build sdk/template out of tree with find_package(accel) and install
#     it into the install's plugin directory; `accel-info` must list
#     template:0 and `accel-conform --backend template` must pass;
#  3. build a copy with its Makefile and pkg-config; `make install` must
#     target `pkg-config --variable=plugindir accel-plugin`; with
#     ACCEL_PLUGIN_PATH pointing at the build, `accel-info` must list
#     template:0 and `accel-conform --plugin <the .so>` must pass;
#  4. the author's path from the install alone: the installed template
#     (share/accel/sdk/template, found with `pkg-config --variable=sdkdir`)
#     renamed with its rename.sh to "mine", built with make, must pass
#     accel-conform with the kernels from `pkg-config --variable=conformdir`
#     and from accel_CONFORM_KERNEL_DIR of the CMake package.
# Steps 2 and 3 also build from the installed template, not the sources.
cmake_minimum_required(VERSION 3.25)

set(prefix "${WORK_DIR}/prefix")
set(libdir "${prefix}/${LIBDIR}")
set(plugindir "${libdir}/accel")
set(info "${prefix}/${BINDIR}/accel-info")
set(conform "${prefix}/${BINDIR}/accel-conform")
foreach(var ACCEL_PLUGIN_PATH ACCEL_BACKEND ACCEL_LOG DESTDIR LD_LIBRARY_PATH
            CMAKE_PREFIX_PATH ACCEL_TEMPLATE_DEVICES)
  unset(ENV{${var}})
endforeach()
set(ENV{PKG_CONFIG_PATH} "${libdir}/pkgconfig")
set(ENV{PKG_CONFIG_LIBDIR} "${libdir}/pkgconfig")

# run(<command>... [OUTPUT <var>] [ENV <k=v>...]): fails the test with the
# output when the command exits non-zero.
function(run)
  cmake_parse_arguments(R "" "OUTPUT;WORKING_DIRECTORY" "ENV" ${ARGN})
  set(command ${R_UNPARSED_ARGUMENTS})
  if(R_ENV)
    set(command ${CMAKE_COMMAND} -E env ${R_ENV} ${command})
  endif()
  if(NOT R_WORKING_DIRECTORY)
    set(R_WORKING_DIRECTORY "${WORK_DIR}")
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE rc
                  WORKING_DIRECTORY "${R_WORKING_DIRECTORY}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " text "${command}")
    message(FATAL_ERROR "failed (${rc}): ${text}\n${out}\n${err}")
  endif()
  if(R_OUTPUT)
    set(${R_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(require_text what needle text)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${needle}' in:\n${text}")
  endif()
endfunction()

function(require_file path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "missing: ${path}")
  endif()
endfunction()

# 1. The install.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
require_file("${conform}")
require_file("${prefix}/share/accel/conform")
set(sdk "${prefix}/share/accel/sdk")
foreach(f template/plugin.c template/module.c template/README.md
          template/rename.sh template/CMakeLists.txt template/Makefile
          plugin-guide.md conformance.md CHANGES.md
          examples/cpu_kernel/CMakeLists.txt)
  require_file("${sdk}/${f}")
endforeach()
require_file("${prefix}/share/accel/conform/src/README.md")
# The installed template, not the source tree, is what the author builds.
set(TEMPLATE_DIR "${sdk}/template")
# The installed suite finds its test kernels under share/accel/conform.
run(${conform} --backend cpu --filter kernel. OUTPUT out)
message(STATUS "installed accel-conform, kernels:\n${out}")
require_text("installed accel-conform kernel check" "1 passed, 0 failed"
             "${out}")
if(EXISTS "${plugindir}/libaccel-template.so")
  message(FATAL_ERROR "the in-tree template must not be installed")
endif()

# 2. CMake: find_package(accel), install into accel_PLUGIN_DIR.
set(cmake_build "${WORK_DIR}/cmake-build")
set(args -S ${TEMPLATE_DIR} -B ${cmake_build} -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}")
if(MAKE_PROGRAM)
  list(APPEND args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
run(${CMAKE_COMMAND} ${args})
run(${CMAKE_COMMAND} --build ${cmake_build})
run(${CMAKE_COMMAND} --install ${cmake_build})
require_file("${plugindir}/libaccel-template.so")
run(${info} OUTPUT out)
message(STATUS "accel-info with the template installed:\n${out}")
require_text("accel-info lists the installed template" "template:0" "${out}")
run(${conform} --backend template --require-ops OUTPUT out)
message(STATUS "accel-conform --backend template:\n${out}")
require_text("accel-conform --backend template" " 0 failed," "${out}")
file(REMOVE "${plugindir}/libaccel-template.so")

# 3. make + pkg-config, built in a copy of the template directory.
if(NOT MAKE OR NOT PKG_CONFIG)
  message(FATAL_ERROR "make (${MAKE}) and pkg-config (${PKG_CONFIG}) are "
                      "needed for the Makefile build")
endif()
set(make_dir "${WORK_DIR}/make-build")
file(COPY "${TEMPLATE_DIR}/" DESTINATION "${make_dir}")
set(zdefs "")
if(EXTRA_FLAGS MATCHES "-fsanitize")
  set(zdefs "ZDEFS=")
endif()
run(${MAKE} -C ${make_dir} CC=${CC} "CFLAGS=-O2 ${EXTRA_FLAGS}" ${zdefs}
    PKG_CONFIG=${PKG_CONFIG})
set(so "${make_dir}/libaccel-template.so")
require_file("${so}")
run(${MAKE} -C ${make_dir} install DESTDIR=${WORK_DIR}/destdir
    PKG_CONFIG=${PKG_CONFIG})
require_file("${WORK_DIR}/destdir${plugindir}/libaccel-template.so")
run(${info} ENV ACCEL_PLUGIN_PATH=${make_dir} OUTPUT out)
message(STATUS "accel-info with ACCEL_PLUGIN_PATH=${make_dir}:\n${out}")
require_text("accel-info lists the template from ACCEL_PLUGIN_PATH"
             "template:0" "${out}")
run(${conform} --plugin ${so} --require-ops OUTPUT out)
message(STATUS "accel-conform --plugin ${so}:\n${out}")
require_text("accel-conform --plugin" " 0 failed," "${out}")

# 4. From the install alone: rename the installed template and build it.
run(${PKG_CONFIG} --variable=sdkdir accel-plugin OUTPUT sdkdir)
string(STRIP "${sdkdir}" sdkdir)
run(${PKG_CONFIG} --variable=conformdir accel-plugin OUTPUT conformdir)
string(STRIP "${conformdir}" conformdir)
require_file("${sdkdir}/template/rename.sh")
require_file("${conformdir}")
run(sh ${sdkdir}/template/rename.sh mine ${WORK_DIR}/accel-mine)
run(${MAKE} -C ${WORK_DIR}/accel-mine CC=${CC} "CFLAGS=-O2 ${EXTRA_FLAGS}"
    ${zdefs} PKG_CONFIG=${PKG_CONFIG})
set(mine "${WORK_DIR}/accel-mine/libaccel-mine.so")
require_file("${mine}")
run(${conform} --plugin ${mine} --require-ops --kernel-dir ${conformdir}
    OUTPUT out)
message(STATUS "accel-conform --plugin ${mine}:\n${out}")
require_text("accel-conform on the renamed installed template" " 0 failed,"
             "${out}")
require_text("the renamed template runs the installed test kernels"
             "PASS         launch.offsets" "${out}")
# The CMake package names the same kernel directory.
file(WRITE "${WORK_DIR}/probe/CMakeLists.txt" "
cmake_minimum_required(VERSION 3.16)
project(probe NONE)
find_package(accel REQUIRED)
message(STATUS \"SDK=\${accel_SDK_DIR} KERNELS=\${accel_CONFORM_KERNEL_DIR}\")
")
run(${CMAKE_COMMAND} -S ${WORK_DIR}/probe -B ${WORK_DIR}/probe/build
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    OUTPUT out)
get_filename_component(real_conformdir "${conformdir}" REALPATH)
get_filename_component(real_sdkdir "${sdkdir}" REALPATH)
require_text("accel_CONFORM_KERNEL_DIR" "KERNELS=${real_conformdir}" "${out}")
require_text("accel_SDK_DIR" "SDK=${real_sdkdir}" "${out}")
