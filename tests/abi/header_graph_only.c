// SPDX-License-Identifier: MIT
//
// <accel/graph.h> compiles when included first, on libaccel's include
// directory alone (it includes <accel/accel.h>, which includes it back).
#include <accel/graph.h>

size_t abi_graph_h_use_all(void);
size_t abi_graph_h_use_all(void) {
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  accel_graph_node_kind_t kind = ACCEL_GRAPH_NODE_KERNEL;
  accel_graph_t* graph = NULL;
  return sizeof(info) + (size_t)kind + (graph == NULL) + info.node_count;
}
