#!/usr/bin/env bash
# mpirun's "ssh" on the emulated cluster (scripts/cluster.sh): `cluster-rsh.sh HOST command...`
# runs the command inside HOST's namespaces (network, hostname, mounts) with a clean environment
# and a login shell's parsing of the words, as ssh would.
set -euo pipefail
state=${TOROID_CLUSTER_DIR:-/run/toroid-cluster}
host=$1
shift
# Options ssh would take before the host (mpirun passes none by default; tolerate -x and co).
while [[ "$host" == -* ]]; do host=$1; shift; done
pidfile="$state/${host}/pid"
[ -f "$pidfile" ] || { echo "cluster-rsh.sh: no host '$host' in $state" >&2; exit 255; }
exec nsenter -t "$(cat "$pidfile")" -n -u -m -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME="${HOME:-/root}" TOROID_CLUSTER_DIR="$state" /bin/sh -c "$*"
