#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a program under mpirun on two "hosts": two network namespaces joined
# by a veth pair, TCP between them (docs/collectives.md). mpirun and rank
# 0 run in the first namespace; the second namespace's Open MPI daemon is
# started through a launch agent that enters it, as ssh would reach a real
# machine. Needs root (CAP_NET_ADMIN); exits 77 where namespaces cannot be
# made. The namespaces and addresses are this test's own, and are removed
# on exit.
#   two_hosts.sh MPIEXEC PROGRAM [ARGS...]
set -u
mpiexec=$1
shift
tag="accel$$"
ns_a="${tag}a" ns_b="${tag}b"
net=10.213.$(($$ % 200 + 20))
dir=$(mktemp -d)
cleanup() {
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

if ! ip netns add "$ns_a" 2>/dev/null || ! ip netns add "$ns_b"; then
  echo "two_hosts: cannot create network namespaces here (not root?)"
  exit 77
fi
ip link add "${tag}x" type veth peer name "${tag}y" || exit 77
ip link set "${tag}x" netns "$ns_a"
ip link set "${tag}y" netns "$ns_b"
ip -n "$ns_a" addr add "$net.1/24" dev "${tag}x"
ip -n "$ns_b" addr add "$net.2/24" dev "${tag}y"
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set "${tag}x" up
ip -n "$ns_b" link set "${tag}y" up
if ! ip -n "$ns_a" route get "$net.2" >/dev/null; then
  echo "two_hosts: no route between the namespaces"
  exit 1
fi

# The launch agent: "agent HOST COMMAND..." runs COMMAND in HOST's
# namespace (every host but this one is "hostb").
cat >"$dir/agent" <<AGENT
#!/bin/sh
shift
exec ip netns exec $ns_b sh -c "\$*"
AGENT
chmod +x "$dir/agent"
printf 'localhost slots=1\nhostb slots=1\n' >"$dir/hosts"

exports=(-x COMM_TEST_EXPECT_HOSTS=2)
for v in ACCEL_PLUGIN_PATH ACCEL_BACKEND ACCEL_COMM_ENGINE_PATH \
    ACCEL_COMM_TIMEOUT LD_LIBRARY_PATH ASAN_OPTIONS UBSAN_OPTIONS; do
  if [ -n "${!v+set}" ]; then exports+=(-x "$v"); fi
done
ip netns exec "$ns_a" "$mpiexec" --allow-run-as-root -np 2 \
  --hostfile "$dir/hosts" --map-by node \
  --mca plm_rsh_agent "$dir/agent" \
  --mca btl self,tcp --mca btl_tcp_if_include "$net.0/24" \
  --mca oob_tcp_if_include "$net.0/24" \
  "${exports[@]}" "$@"
