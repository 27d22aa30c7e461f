#!/usr/bin/env bash
# Multi-host MPI on one machine: N network namespaces ("hosts") joined through a bridge, one
# rank per namespace, TCP only (no shared memory between the ranks), links optionally
# rate-limited with tc tbf (this kernel has no netem). Needs root (ip netns, tc).
#
#   bench/mpi_netns.sh [-n N] [-r RATE] [-b BURST] [-k] -- <pipewright> run <run flags...>
#     -n N     namespaces / ranks (2-4, default 2)
#     -r RATE  tc rate of every namespace's link, e.g. 100mbit (default: unlimited)
#     -b BURST tbf bucket (default 32kbit: 4 KB, so a transfer is paced from its first bytes;
#              the simulator models no burst)
#     -k       keep the namespaces afterwards (default: removed on exit)
#   e.g. bench/mpi_netns.sh -n 2 -r 200mbit -- build/pipewright run --model gpt --stages 2 \
#          --micro-batches 8 --steps 20 --json
#
# Layout: namespaces pw-host0..N-1 with veth "eth0" at 10.77.0.(i+1)/24, their peers enslaved to
# bridge pwbr0 in namespace pw-hub. mpirun runs in pw-host0; Open MPI's rsh launch agent is a
# small wrapper that starts the daemon of host i with `ip netns exec pw-host<i>` (the same
# file system everywhere, so the binary path is the same on every "host").
set -euo pipefail

N=2 RATE="" BURST=32kbit KEEP=0
while getopts "n:r:b:k" o; do
  case $o in
    n) N=$OPTARG ;;
    r) RATE=$OPTARG ;;
    b) BURST=$OPTARG ;;
    k) KEEP=1 ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $# -lt 2 ] || [ "$N" -lt 2 ] || [ "$N" -gt 4 ]; then sed -n '2,18p' "$0"; exit 2; fi
[ "$(id -u)" = 0 ] || { echo "mpi_netns.sh: needs root (ip netns, tc)" >&2; exit 2; }

work=$(mktemp -d /tmp/pw-netns.XXXXXX)
cleanup() {
  if [ "$KEEP" = 0 ]; then
    for i in $(seq 0 $((N - 1))); do ip netns del "pw-host$i" 2>/dev/null || true; done
    ip netns del pw-hub 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add pw-hub
ip -n pw-hub link add pwbr0 type bridge
ip -n pw-hub link set pwbr0 up
: > "$work/hosts"
for i in $(seq 0 $((N - 1))); do
  ns=pw-host$i
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "pwv$i" netns "$ns" type veth peer name "pwp$i" netns pw-hub
  ip -n "$ns" link set "pwv$i" name eth0
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n pw-hub link set "pwp$i" master pwbr0
  ip -n pw-hub link set "pwp$i" up
  if [ -n "$RATE" ]; then
    # Egress of every host: each transfer crosses one limited link (the sender's).
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$RATE" burst "$BURST" latency 500ms
  fi
  echo "10.77.0.$((i + 1)) slots=1" >> "$work/hosts"
done

# Launch agent: called as `agent [ssh options] <host> <command...>`; runs the command in the
# host's namespace.
cat > "$work/agent" <<'EOF'
#!/usr/bin/env bash
while [ "${1:0:1}" = "-" ]; do shift; done
host=$1; shift
exec ip netns exec "pw-host$(( ${host##*.} - 1 ))" /bin/sh -c "$*"
EOF
chmod +x "$work/agent"

echo "mpi_netns.sh: $N namespaces (10.77.0.1-$N), link rate ${RATE:-unlimited}" >&2
ip netns exec pw-host0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun --allow-run-as-root --hostfile "$work/hosts" -np "$N" --map-by node \
  --mca plm_rsh_agent "$work/agent" --mca btl tcp,self \
  --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
  ${OMP_WAIT_POLICY:+-x OMP_WAIT_POLICY} -x PATH "$@"
