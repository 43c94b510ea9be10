# SPDX-License-Identifier: MIT
# One step of the install test, run as `cmake -P` by CTest (see
# CMakeLists.txt for the variables). Any missing piece is a FATAL_ERROR,
# which makes `cmake -P` exit non-zero.
#   tree       clean WORK_DIR, install BUILD_DIR into WORK_DIR/prefix, check
#              the layout, the SONAME, the .pc files and the installed tools
#   pkgconfig  build and run consumer/main.c and the README example with
#              `pkg-config --cflags --libs accel`
#   cmake      build and run consumer/ with find_package(accel)
#   sdk        build plugin/plugin.c with `pkg-config --cflags accel-plugin`
#              and with find_package(accel) + accel::plugin
cmake_minimum_required(VERSION 3.25)

foreach(dir BINDIR LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${${dir}}")
    message(FATAL_ERROR "CMAKE_INSTALL_${dir} is absolute (${${dir}}); "
                        "the install test needs a relocatable layout")
  endif()
endforeach()
set(prefix "${WORK_DIR}/prefix")
set(libdir "${prefix}/${LIBDIR}")
set(plugindir "${libdir}/accel")
set(step_dir "${WORK_DIR}/${STEP}")
separate_arguments(extra_flags UNIX_COMMAND "${EXTRA_FLAGS}")
set(warnings -std=c11 -Wall -Wextra -Wpedantic -Werror)

# The user's environment must not leak in: no plugin path, no backend
# choice, no other accel on the pkg-config path, no DESTDIR.
foreach(var ACCEL_PLUGIN_PATH ACCEL_BACKEND ACCEL_LOG DESTDIR
            LD_LIBRARY_PATH CMAKE_PREFIX_PATH)
  unset(ENV{${var}})
endforeach()
set(ENV{PKG_CONFIG_PATH} "${libdir}/pkgconfig")
set(ENV{PKG_CONFIG_LIBDIR} "${libdir}/pkgconfig")

# run(<command>... [OUTPUT <var>] [ENV <k=v>...]): runs a command and fails
# the test with its output if it exits non-zero.
function(run)
  cmake_parse_arguments(R "" "OUTPUT" "ENV" ${ARGN})
  set(command ${R_UNPARSED_ARGUMENTS})
  if(R_ENV)
    set(command ${CMAKE_COMMAND} -E env ${R_ENV} ${command})
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " text "${command}")
    message(FATAL_ERROR "failed (${rc}): ${text}\n${out}\n${err}")
  endif()
  if(R_OUTPUT)
    set(${R_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(require_file path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "missing from the install: ${path}")
  endif()
endfunction()

function(require_match what regex text)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected a match for '${regex}' in:\n"
                        "${text}")
  endif()
endfunction()

# require_text(<what> <needle> <text>): `needle` is a literal substring.
function(require_text what needle text)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${needle}' in:\n${text}")
  endif()
endfunction()

function(pkg_config out)
  if(NOT EXISTS "${PKG_CONFIG}")
    message(FATAL_ERROR "pkg-config not found (${PKG_CONFIG})")
  endif()
  run(${PKG_CONFIG} ${ARGN} OUTPUT text)
  string(STRIP "${text}" text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# pc_path(<out> <pkg-config args>...): the path pkg-config prints, made
# canonical (the .pc files give ${pcfiledir}/../.. paths).
function(pc_path out)
  pkg_config(text ${ARGN})
  string(REGEX REPLACE "^-[IL]" "" text "${text}")
  file(REAL_PATH "${text}" text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# check_pc_files(<prefix>): accel.pc and accel-plugin.pc on the pkg-config
# path name <prefix>'s directories, found relative to the .pc file.
function(check_pc_files root)
  file(REAL_PATH "${root}" root)
  file(STRINGS "${root}/${LIBDIR}/pkgconfig/accel.pc" line REGEX "^prefix=")
  require_match("accel.pc prefix" "^prefix=\\\${pcfiledir}/" "${line}")
  foreach(pc accel accel-plugin)
    pc_path(dir --cflags-only-I ${pc})
    if(NOT dir STREQUAL "${root}/${INCLUDEDIR}")
      message(FATAL_ERROR "${pc} Cflags: -I${dir}, expected "
                          "${root}/${INCLUDEDIR}")
    endif()
    pc_path(dir --variable=plugindir ${pc})
    if(NOT dir STREQUAL "${root}/${LIBDIR}/accel")
      message(FATAL_ERROR "${pc} plugindir: ${dir}, expected "
                          "${root}/${LIBDIR}/accel")
    endif()
  endforeach()
  pc_path(dir --libs-only-L accel)
  if(NOT dir STREQUAL "${root}/${LIBDIR}")
    message(FATAL_ERROR "accel Libs: -L${dir}, expected ${root}/${LIBDIR}")
  endif()
  pkg_config(libs --libs-only-l accel)
  require_text("accel Libs" "-laccel" "${libs}")
  pkg_config(version --modversion accel)
  require_match("accel version" "^[0-9]+\\.[0-9]+\\.[0-9]+$" "${version}")
endfunction()

# Runs a consumer binary against the install and checks it used cpu:0 from
# the installed plugin directory (the path in the load report).
function(check_consumer binary)
  run(${binary} ENV LD_LIBRARY_PATH=${libdir} OUTPUT out)
  message(STATUS "${binary}:\n${out}")
  file(REAL_PATH "${plugindir}/libaccel-cpu.so" cpu_plugin)
  require_text("${binary}" "device cpu:0\n" "${out}")
  require_text("${binary}" "round trip ok\n" "${out}")
  require_text("${binary} loads cpu:0 from the install"
               "plugin cpu ${cpu_plugin}\n" "${out}")
endfunction()

# configure_and_build(<source> <binary> [cmake args...])
function(configure_and_build source binary)
  set(args -S ${source} -B ${binary} -G ${GENERATOR}
      -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}")
  if(MAKE_PROGRAM)
    list(APPEND args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
  endif()
  run(${CMAKE_COMMAND} ${args} ${ARGN} OUTPUT out)
  message(STATUS "${out}")
  run(${CMAKE_COMMAND} --build ${binary})
  # find_package must have used the scratch install, not another accel.
  file(STRINGS ${binary}/CMakeCache.txt accel_dir REGEX "^accel_DIR:")
  require_text("accel_DIR" "=${libdir}/cmake/accel" "${accel_dir}")
  set(configure_output "${out}" PARENT_SCOPE)
endfunction()

if(STEP STREQUAL "tree")
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

  # Library, development symlink and SONAME.
  require_file("${libdir}/libaccel.so.1")
  if(NOT IS_SYMLINK "${libdir}/libaccel.so")
    message(FATAL_ERROR "${libdir}/libaccel.so is not a symlink")
  endif()
  file(READ_SYMLINK "${libdir}/libaccel.so" target)
  require_match("libaccel.so symlink" "^libaccel\\.so\\.1$" "${target}")
  run(${READELF} -d "${libdir}/libaccel.so.1" OUTPUT dynamic)
  require_match("SONAME" "Library soname: \\[libaccel\\.so\\.1\\]"
                "${dynamic}")

  # Headers, plugins, package files.
  require_file("${prefix}/${INCLUDEDIR}/accel/accel.h")
  require_file("${prefix}/${INCLUDEDIR}/accel/comm.h")
  # accel.h includes it at its end.
  require_file("${prefix}/${INCLUDEDIR}/accel/ops_nn.h")
  require_file("${prefix}/${INCLUDEDIR}/accel/plugin.h")
  require_file("${plugindir}/libaccel-cpu.so")
  foreach(file accelConfig.cmake accelConfigVersion.cmake accelTargets.cmake)
    require_file("${libdir}/cmake/accel/${file}")
  endforeach()
  require_file("${libdir}/pkgconfig/accel.pc")
  require_file("${libdir}/pkgconfig/accel-plugin.pc")

  check_pc_files("${prefix}")
  pkg_config(libs --libs accel-plugin)
  if(NOT libs STREQUAL "")
    message(FATAL_ERROR "accel-plugin must not link anything: '${libs}'")
  endif()
  # Relocatable: a copy of the prefix elsewhere describes itself.
  set(moved "${WORK_DIR}/moved/prefix")
  file(MAKE_DIRECTORY "${WORK_DIR}/moved")
  file(COPY "${prefix}" DESTINATION "${WORK_DIR}/moved")
  set(ENV{PKG_CONFIG_PATH} "${moved}/${LIBDIR}/pkgconfig")
  set(ENV{PKG_CONFIG_LIBDIR} "${moved}/${LIBDIR}/pkgconfig")
  check_pc_files("${moved}")
  file(REMOVE_RECURSE "${WORK_DIR}/moved")

  # Tools run from the prefix without LD_LIBRARY_PATH (RPATH $ORIGIN).
  set(info "${prefix}/${BINDIR}/accel-info")
  require_file("${info}")
  run(${READELF} -d "${info}" OUTPUT dynamic)
  require_text("accel-info RUNPATH" "$ORIGIN/" "${dynamic}")
  run(${info} OUTPUT out)
  message(STATUS "installed accel-info:\n${out}")
  require_text("installed accel-info" "cpu:0" "${out}")

elseif(STEP STREQUAL "pkgconfig")
  file(REMOVE_RECURSE "${step_dir}")
  file(MAKE_DIRECTORY "${step_dir}")
  pkg_config(flags --cflags --libs accel)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CC} ${extra_flags} ${warnings} ${SOURCE_DIR}/consumer/main.c
      ${flags} -o ${step_dir}/consumer)
  check_consumer(${step_dir}/consumer)

  # The README's example, verbatim: the block after "<!-- example -->".
  file(READ "${README}" readme)
  string(FIND "${readme}" "<!-- example -->\n```c\n" begin)
  if(begin EQUAL -1)
    message(FATAL_ERROR "${README} has no '<!-- example -->' C block")
  endif()
  string(SUBSTRING "${readme}" ${begin} -1 readme)
  string(REGEX REPLACE "^<!-- example -->\n```c\n" "" readme "${readme}")
  string(FIND "${readme}" "\n```" end)
  string(SUBSTRING "${readme}" 0 ${end} example)
  file(WRITE "${step_dir}/readme_example.c" "${example}\n")
  run(${CC} ${extra_flags} ${warnings} ${step_dir}/readme_example.c
      ${flags} -o ${step_dir}/readme_example)
  run(${step_dir}/readme_example ENV LD_LIBRARY_PATH=${libdir} OUTPUT out)
  message(STATUS "README example:\n${out}")
  # The example takes the default device: cpu:0, or a GPU on a GPU node.
  require_match("README example"
                "^[a-z][a-z0-9_]*:[0-9]+: round trip ok in [0-9.]+ ms\n$"
                "${out}")

elseif(STEP STREQUAL "cmake")
  file(REMOVE_RECURSE "${step_dir}")
  configure_and_build(${SOURCE_DIR}/consumer ${step_dir})
  check_consumer(${step_dir}/consumer)

elseif(STEP STREQUAL "sdk")
  file(REMOVE_RECURSE "${step_dir}")
  file(MAKE_DIRECTORY "${step_dir}")
  # pkg-config: headers only, no libaccel.
  pkg_config(flags --cflags --libs accel-plugin)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(plugin ${step_dir}/libaccel-sample.so)
  run(${CC} ${extra_flags} ${warnings} -fPIC -shared -fvisibility=hidden
      ${flags} ${SOURCE_DIR}/plugin/plugin.c -o ${plugin})
  # CMake: accel::plugin, and accel_PLUGIN_DIR pointing at the install.
  configure_and_build(${SOURCE_DIR}/plugin ${step_dir}/cmake)
  require_text("accel_PLUGIN_DIR" "accel_PLUGIN_DIR=${plugindir}\n"
               "${configure_output}")
  foreach(so ${plugin} ${step_dir}/cmake/libaccel-sample.so)
    run(${READELF} -d --dyn-syms ${so} OUTPUT dynamic)
    require_text("${so} exports" " accel_plugin_entry\n" "${dynamic}")
    if(dynamic MATCHES "NEEDED[^\n]*libaccel\\.so")
      message(FATAL_ERROR "${so} links libaccel; plugins must not")
    endif()
  endforeach()

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
