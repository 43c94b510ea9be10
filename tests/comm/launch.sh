#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Starts NP copies of a program without a launcher, as a user of the
# rendezvous environment would (docs/collectives.md): each gets
# ACCEL_COMM_RANK and ACCEL_COMM_SIZE, and either ACCEL_COMM_ADDR and
# ACCEL_COMM_PORT (rank 0 on 127.0.0.1, a free port) or, with --file,
# ACCEL_COMM_FILE. Waits for all; fails if one fails, skips (77) if all
# skip. Each rank's output is prefixed with its rank.
#   launch.sh [--file] [--ompi-server] [--leave-out] [--limit S] NP PROGRAM [ARGS...]
# --ompi-server  starts Open MPI's ompi-server first and points every rank
#                at it (OMPI_MCA_pmix_server_uri), which Open MPI needs to
#                join processes started apart (MPI_Comm_connect/accept)
# --leave-out    does not start the last rank (the others must say so)
# --limit S      kills ranks still running after S seconds (default 120)
set -u
file=0 server=0 leave_out=0 limit=120
while [ $# -gt 0 ]; do
  case $1 in
    --file) file=1 ;;
    --ompi-server) server=1 ;;
    --leave-out) leave_out=1 ;;
    --limit) limit=$2; shift ;;
    *) break ;;
  esac
  shift
done
np=$1
shift
dir=$(mktemp -d)
pids=()
server_pid=
cleanup() {
  for pid in "${pids[@]}" $server_pid; do kill "$pid" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT

if [ "$file" = 1 ]; then
  export ACCEL_COMM_FILE=$dir/rendezvous
  unset ACCEL_COMM_ADDR ACCEL_COMM_PORT
else
  # A free port: bound and released; rank 0 binds it again at once.
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || exit 1
  export ACCEL_COMM_ADDR=127.0.0.1 ACCEL_COMM_PORT=$port
  unset ACCEL_COMM_FILE
fi
export ACCEL_COMM_SIZE=$np

if [ "$server" = 1 ]; then
  if ! command -v ompi-server >/dev/null; then
    echo "launch: no ompi-server"
    exit 77
  fi
  timeout -k 5 "$((limit + 30))" ompi-server --no-daemonize -r "$dir/uri" &
  server_pid=$!
  for _ in $(seq 100); do
    [ -s "$dir/uri" ] && break
    sleep 0.1
  done
  if [ ! -s "$dir/uri" ]; then
    echo "launch: ompi-server did not start"
    exit 1
  fi
  export OMPI_MCA_pmix_server_uri=file:$dir/uri
fi

last=$np
[ "$leave_out" = 1 ] && last=$((np - 1))
for ((rank = 0; rank < last; rank++)); do
  ACCEL_COMM_RANK=$rank timeout -k 5 "$limit" "$@" \
    > >(sed "s/^/[rank $rank] /") 2>&1 &
  pids+=($!)
done
rc=0 skipped=0
for pid in "${pids[@]}"; do
  wait "$pid"
  status=$?
  if [ "$status" = 77 ]; then
    skipped=$((skipped + 1))
  elif [ "$status" != 0 ]; then
    rc=1
  fi
done
pids=()
if [ -n "$server_pid" ]; then
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=
fi
wait  # the output filters
if [ "$rc" = 0 ] && [ "$skipped" = "$last" ]; then
  exit 77
fi
[ "$skipped" = 0 ] || [ "$rc" != 0 ] || rc=1  # some skipped, some ran
exit $rc
