#!/bin/sh
# SPDX-License-Identifier: MIT
# Copies the template plugin to a new directory under a new name:
#   ./rename.sh <name> [<destination>]
# <name> is the plugin's short id ([a-z][a-z0-9_]{0,30}), used in device
# names ("<name>:0") and in the file name (libaccel-<name>.so). The default
# destination is ./accel-<name> under the current directory. Every
# template_/TEMPLATE_ prefix, the file name template.h and the plugin name
# are rewritten; nothing else changes.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 <name> [<destination>]" >&2
  exit 2
fi
name=$1
case $name in
  [a-z]*) ;;
  *) echo "$0: name must start with a lowercase letter" >&2; exit 2 ;;
esac
if ! printf '%s' "$name" | grep -Eq '^[a-z][a-z0-9_]{0,30}$'; then
  echo "$0: name must match [a-z][a-z0-9_]{0,30}" >&2
  exit 2
fi
upper=$(printf '%s' "$name" | tr 'a-z' 'A-Z')
src=$(cd "$(dirname "$0")" && pwd)
dest=${2:-accel-$name}
if [ -e "$dest" ]; then
  echo "$0: $dest already exists" >&2
  exit 1
fi
mkdir -p "$dest"
for file in CMakeLists.txt Makefile README.md plugin.c memory.c stream.c \
            event.c ops.c module.c template.h; do
  out=$file
  [ "$file" = template.h ] && out=$name.h
  sed -e "s/TEMPLATE_/${upper}_/g" \
      -e "s/template_/${name}_/g" \
      -e "s/accel-template/accel-${name}/g" \
      -e "s/accel_template/accel_${name}/g" \
      -e "s/\"template\"/\"${name}\"/g" \
      -e "s/template\.h/${name}.h/g" \
      -e "s/^NAME = template/NAME = ${name}/" \
      -e "s/ACCEL_SDK_TEMPLATE_TEMPLATE_H_/ACCEL_PLUGIN_${upper}_H_/g" \
      "$src/$file" > "$dest/$out"
done
echo "created $dest: plugin '$name' (libaccel-$name.so)"
echo "next: cd $dest && cmake -S . -B build -DCMAKE_PREFIX_PATH=<accel prefix>"
