# Sourced by the cluster tests: `cluster_test_setup BUILD_DIR NAME` sets $root, $cluster and
# $log, gives the test a cluster state folder of its own (/run/toroid-NAME), and takes the
# cluster down and removes $log however the test ends; `fail MESSAGE` ends the test.
cluster_test_setup() {
  build=$1
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cluster=$root/scripts/cluster.sh
  export TOROID_CLUSTER_DIR=/run/toroid-$2
  export TOROID_BUILD_DIR=$build
  log=$(mktemp -d)
  trap '"$cluster" down >/dev/null 2>&1 || true; rm -rf "$log"' EXIT
}
fail() { echo "FAIL: $*" >&2; exit 1; }
