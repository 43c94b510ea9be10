# SPDX-License-Identifier: MIT
# Checks that the ACCEL_SHARED_TYPES block is byte-for-byte the same in both
# public headers.
#   cmake -DPLUGIN_H=<plugin.h> -DACCEL_H=<accel.h> [-DOUT_DIR=<dir>]
#         -P check_shared_block.cmake
# Fails (non-zero exit) if a marker is missing or doubled, or the blocks
# differ; with OUT_DIR it writes both blocks there and shows a diff.
set(begin_marker "#ifndef ACCEL_SHARED_TYPES_DEFINED_\n")
set(end_marker "#endif  // ACCEL_SHARED_TYPES_DEFINED_\n")

# Sets `out` to the text from the begin marker to the end of the end
# marker in `file`.
function(extract_block file out)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file} does not exist")
  endif()
  file(READ "${file}" text)
  string(FIND "${text}" "${begin_marker}" begin)
  string(FIND "${text}" "${begin_marker}" begin_last REVERSE)
  string(FIND "${text}" "${end_marker}" end)
  string(FIND "${text}" "${end_marker}" end_last REVERSE)
  if(begin EQUAL -1 OR end EQUAL -1)
    message(FATAL_ERROR "${file}: shared-types guard markers not found")
  endif()
  if(NOT begin EQUAL begin_last OR NOT end EQUAL end_last)
    message(FATAL_ERROR "${file}: shared-types guard markers appear twice")
  endif()
  if(NOT begin LESS end)
    message(FATAL_ERROR "${file}: shared-types end marker before begin")
  endif()
  string(LENGTH "${end_marker}" end_length)
  math(EXPR length "${end} + ${end_length} - ${begin}")
  string(SUBSTRING "${text}" ${begin} ${length} block)
  set(${out} "${block}" PARENT_SCOPE)
endfunction()

extract_block("${PLUGIN_H}" plugin_block)
extract_block("${ACCEL_H}" accel_block)
string(LENGTH "${plugin_block}" plugin_length)
if(plugin_length LESS 200)
  message(FATAL_ERROR "shared-types block suspiciously short")
endif()

if(NOT "${plugin_block}" STREQUAL "${accel_block}")
  if(OUT_DIR)
    file(WRITE "${OUT_DIR}/shared_block_plugin.h.txt" "${plugin_block}")
    file(WRITE "${OUT_DIR}/shared_block_accel.h.txt" "${accel_block}")
    execute_process(COMMAND diff -u "${OUT_DIR}/shared_block_plugin.h.txt"
                            "${OUT_DIR}/shared_block_accel.h.txt")
  endif()
  message(FATAL_ERROR "the ACCEL_SHARED_TYPES blocks of ${PLUGIN_H} and "
                      "${ACCEL_H} differ; keep them identical")
endif()
message(STATUS "shared-types blocks identical (${plugin_length} bytes)")
