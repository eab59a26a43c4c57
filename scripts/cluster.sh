#!/usr/bin/env bash
# An emulated cluster on this machine: each host is a network namespace with its own hostname
# (UTS namespace) and its own /dev/shm and /tmp (mount namespace), so MPI sees separate nodes;
# links are veth pairs whose every direction is shaped with tc. mpirun reaches the hosts without
# ssh, through scripts/cluster-rsh.sh, which enters a host's namespaces. Needs root.
#
#   scripts/cluster.sh up switch [--hosts N] [--rate R] [--delay D] [--share DIR]...
#   scripts/cluster.sh up torus XxY[xZ...][:wrap=LETTERS|none] [--rate R] [--delay D] [--share DIR]...
#            (the hosts see the repository, $TOROID_BUILD_DIR and each --share DIR, as on a
#            shared file system; their /tmp and /dev/shm are their own)
#   scripts/cluster.sh run [--ranks-per-host K] [--np N] [mpirun options...] -- program args...
#                          (N defaults to hosts x K; ranks fill h0 first, then h1, ...)
#   scripts/cluster.sh command [as run]                 (prints the mpirun line for real hosts;
#                                                        run prints it too, at a terminal)
#   scripts/cluster.sh exec HOST -- command args...     (inside one host, e.g. to cut a link)
#   scripts/cluster.sh pids HOST [NAME]                 (processes inside a host, by command name)
#   scripts/cluster.sh status | down
#
# Layouts:
#   switch   every host's eth0 on one bridge (in a namespace of its own, toroid-sw):
#              h0 --eth0==port0-- [br0] --port1==eth0-- h1 ...
#   torus    one veth pair per torus link, named xp/xm/yp/ym/zp/zm (x plus, x minus, ...) on
#            each host, of 1 to 6 dimensions (x y z w v u); host i sits at x = i mod X,
#            y = (i div X) mod Y, z = i div XY, ... (toroid's rank order with one rank per host).
#            Each host holds its address on a port-less bridge `host` and forwards packets for
#            non-neighbours in dimension order, X then Y then Z, the shorter way round where the
#            dimension wraps, as toroid-sim routes (twisted tori are not emulated):
#              h0 --xp==xm-- h1          (2x2: a dimension of 2 has one link, its wraparound
#              |yp           |yp          would join the same pair again)
#              |ym           |ym
#              h2 --xp==xm-- h3
# Addresses: host i is 10.213.1.(i+1), named h<i> in the hosts' own /etc/hosts; nothing is
# assigned outside the namespaces this script makes. Rates are tc's (200mbit, 1gbit; default
# 1gbit), applied with tbf to every direction of every link. --delay needs the kernel's netem
# qdisc; where the kernel has none, up says so and stops rather than run without the delay.
#
# Inside each host net.ipv4.tcp_retries2 is 5 (Linux default 15): a TCP connection with data in
# flight over a cut link then gives up after about 6-12 s instead of about 15 minutes. `run`
# also sets keepalives on mpirun's own connections to the hosts' daemons (4 s idle, 3 probes
# 2 s apart; Open MPI's default is 300 s, then 9 probes): without them a link cut while nothing
# was in flight (ranks waiting inside MPI, or the job aborting) left mpirun waiting forever for a
# daemon it could no longer reach, and that daemon running on its host.
#
# The hosts share this machine's cores, so `run` also makes MPI give up the core while it waits
# (mpi_yield_when_idle): on a 2x2 torus on 2 cores that took 4 MiB torus2d_both from 172 to
# 136 ms (the model: 126 ms) and ring from 322 to 283 ms (252 ms); a rank spinning for a
# message holds the core the sender, or the kernel forwarding it, needs. `down` (also run when `up` fails) kills every
# process in the hosts and removes every namespace and mount this script made.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${TOROID_CLUSTER_DIR:-/run/toroid-cluster}
subnet=10.213.1
prefix=toroid-h

die() { echo "cluster.sh: $*" >&2; exit 2; }
host_ns() { echo "$prefix$1"; }
addr() { echo "$subnet.$(($1 + 1))"; }
hosts() { cat "$state/hosts" 2>/dev/null || echo 0; }
in_host() { local h=$1; shift; ip netns exec "$(host_ns "$h")" "$@"; }

# Bytes per second of a tc rate (200mbit, 1gbit, 500kbit).
rate_bytes() {
  [[ "$1" =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] || die "--rate '$1': expected e.g. 200mbit or 1gbit"
  local scale=1000
  case "${BASH_REMATCH[2]}" in mbit) scale=1000000 ;; gbit) scale=1000000000 ;; esac
  echo $((BASH_REMATCH[1] * scale / 8))
}

# The token bucket holds 1 ms of the rate (at least 16 KB, a few packets): a larger bucket lets
# short messages through at memory speed and makes the link look faster than it is for them.
shape() {  # shape NS DEV: rate (and delay) on DEV's egress inside NS
  local ns=$1 dev=$2 burst
  burst=$(($(rate_bytes "$rate") / 1000))
  ((burst >= 16384)) || burst=16384
  ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 200ms
  if [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc replace dev "$dev" root netem delay "$delay" rate "$rate" limit 100000
  fi
}

check_delay() {
  [ -n "$delay" ] || return 0
  ip netns add toroid-probe
  if ! ip -n toroid-probe link add probe0 type veth peer name probe1 ||
     ! ip netns exec toroid-probe tc qdisc add dev probe0 root netem delay "$delay" 2>/dev/null; then
    ip netns del toroid-probe
    die "--delay $delay: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so links cannot be given a delay; run without --delay (the links then have the veth's own latency, which toroid-sim --calibrate measures)"
  fi
  ip netns del toroid-probe
}

# A host: its network namespace, then a process that holds a UTS and a mount namespace of its
# own (hostname h<i>, private /dev/shm and /tmp, the hosts file); cluster-rsh.sh enters them.
make_host() {
  local i=$1 ns
  ns=$(host_ns "$i")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=5 net.ipv4.ip_forward=1 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  mkdir -p "$state/h$i"
  # The shared folders (the repository, the build tree, --share) stay visible inside, as a
  # shared file system would keep them, also when they live under the private /tmp: each is
  # bound aside before /tmp is replaced, then bound back at its own path.
  ip netns exec "$ns" unshare --uts --mount --propagation private -- /bin/sh -c '
    set -e
    hostname "$1"; dir=$2; hosts=$3; shift 3
    k=0
    for p in "$@"; do mkdir -p "$dir/keep$k"; mount --rbind "$p" "$dir/keep$k"; k=$((k + 1)); done
    mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    k=0
    for p in "$@"; do mkdir -p "$p"; mount --rbind "$dir/keep$k" "$p"; k=$((k + 1)); done
    mount --bind "$hosts" /etc/hosts
    echo ready > "$dir/ready"
    exec sleep infinity' sh "h$i" "$state/h$i" "$state/etc-hosts" "${shared[@]}" </dev/null >/dev/null 2>"$state/h$i/log" &
  echo $! >"$state/h$i/pid"
  for _ in $(seq 100); do [ -f "$state/h$i/ready" ] && break; sleep 0.05; done
  [ -f "$state/h$i/ready" ] || die "host h$i did not start: $(cat "$state/h$i/log")"
  # The holder is unshare's child once it has exec'd: enter through the sleeping process.
  local holder
  holder=$(pgrep -P "$(cat "$state/h$i/pid")" -x sleep || cat "$state/h$i/pid")
  echo "$holder" >"$state/h$i/pid"
}

up_switch() {
  ip netns add toroid-sw
  ip -n toroid-sw link add br0 type bridge
  ip -n toroid-sw link set br0 up
  for ((i = 0; i < n; ++i)); do
    ip link add eth0 netns "$(host_ns $i)" type veth peer name "port$i" netns toroid-sw
    ip -n toroid-sw link set "port$i" master br0 up
    ip -n "$(host_ns $i)" addr add "$(addr $i)/24" dev eth0
    ip -n "$(host_ns $i)" link set eth0 up
    shape "$(host_ns $i)" eth0
    shape toroid-sw "port$i"
  done
}

# Torus: link from host a's interface ia to host b's interface ib.
link_hosts() {
  local a=$1 ia=$2 b=$3 ib=$4
  ip link add "$ia" netns "$(host_ns "$a")" type veth peer name "$ib" netns "$(host_ns "$b")"
  for end in "$a $ia" "$b $ib"; do
    set -- $end
    ip -n "$(host_ns "$1")" link set "$2" up
    shape "$(host_ns "$1")" "$2"
  done
}

# The torus's dimensions: sizes[d], wraps[d] (1/0), named by names[d]; stride[d] = hosts one
# step along d apart.
names=(x y z w v u)
coordinate() { echo $((($1 / stride[$2]) % sizes[$2])); }  # coordinate I D

# Which interface of host i leads to its neighbour one step along dimension d in dir (+1|-1).
step() {  # step I D DIR -> "NEIGHBOUR IFACE"
  local i=$1 d=$2 dir=$3 size=${sizes[$2]} c next iface
  c=$(coordinate "$i" "$d")
  next=$(((c + dir + size) % size))
  if [ "$dir" = 1 ]; then iface=${names[d]}p; else iface=${names[d]}m; fi
  # A dimension of 2 has one link: x=0's xp is x=1's xm.
  if [ "$size" = 2 ]; then if [ "$c" = 0 ]; then iface=${names[d]}p; else iface=${names[d]}m; fi; fi
  echo "$((i + (next - c) * stride[d])) $iface"
}

# Dimension order, X then Y then Z ...; the shorter way round where the dimension wraps (+ on a
# tie).
next_hop() {  # next_hop FROM TO -> "NEIGHBOUR IFACE"
  local from=$1 to=$2 d c t size forward dir
  for ((d = 0; d < ${#sizes[@]}; ++d)); do
    c=$(coordinate "$from" "$d") t=$(coordinate "$to" "$d")
    [ "$c" != "$t" ] && break
  done
  size=${sizes[d]}
  forward=$(((t - c + size) % size))
  if [ "${wraps[d]}" = 1 ]; then
    if ((forward <= size - forward)); then dir=1; else dir=-1; fi
  else
    if ((t > c)); then dir=1; else dir=-1; fi
  fi
  step "$from" "$d" "$dir"
}

up_torus() {
  for ((i = 0; i < n; ++i)); do
    local ns d c size
    ns=$(host_ns $i)
    # The host's address lives on a bridge without ports: an interface that is always there,
    # whichever links go down, and the one interface MPI is told to use.
    ip -n "$ns" link add host type bridge
    ip -n "$ns" link set host up
    ip -n "$ns" addr add "$(addr $i)/32" dev host
    # Links to +x, +y, ... (the minus side is the neighbour's plus side).
    for ((d = 0; d < ${#sizes[@]}; ++d)); do
      size=${sizes[d]} c=$(coordinate "$i" "$d")
      if ((size > 1)) && { ((c + 1 < size)) || { ((wraps[d])) && ((size > 2)); }; }; then
        read -r nb ifa <<<"$(step $i $d 1)"
        link_hosts $i "${names[d]}p" "$nb" "${names[d]}m"
      fi
    done
  done
  for ((i = 0; i < n; ++i)); do
    for ((j = 0; j < n; ++j)); do
      ((i == j)) && continue
      read -r nb ifa <<<"$(next_hop $i $j)"
      ip -n "$(host_ns $i)" route add "$(addr $j)/32" via "$(addr "$nb")" dev "$ifa" onlink src "$(addr $i)"
    done
  done
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, mounts, tc)"
  [ ! -e "$state/hosts" ] || die "a cluster is already up ($state); 'scripts/cluster.sh down' first"
  layout=${1:-}; shift || true
  n=2 rate=1gbit delay="" sizes=() wraps=() stride=()
  shared=("$root")
  [ -z "${TOROID_BUILD_DIR:-}" ] || [ ! -d "$TOROID_BUILD_DIR" ] || shared+=("$(cd "$TOROID_BUILD_DIR" && pwd -P)")
  case "$layout" in
    switch) ;;
    torus)
      local shape_text=${1:-}; shift || true
      [[ "$shape_text" =~ ^([0-9]+(x[0-9]+){0,5})(:wrap=([xyzwvu]+|none))?$ ]] ||
        die "torus '$shape_text': expected sizes joined by x (1 to 6 of them: 4x2, 2x2x2), optionally :wrap=LETTERS|none (e.g. 4x2:wrap=y, 2x2x2:wrap=xz; twisted tori are not emulated)"
      IFS=x read -r -a sizes <<<"${BASH_REMATCH[1]}"
      local letters=${BASH_REMATCH[4]:-all}
      n=1
      for ((d = 0; d < ${#sizes[@]}; ++d)); do
        ((sizes[d] >= 1)) || die "torus '$shape_text': dimension ${names[d]} has size ${sizes[d]}"
        stride[d]=$n
        n=$((n * sizes[d]))
        if [ "$letters" = all ] || [[ "$letters" == *"${names[d]}"* ]]; then wraps[d]=1; else wraps[d]=0; fi
      done
      for ((k = 0; k < ${#letters}; ++k)); do
        [ "$letters" = all ] || [ "$letters" = none ] || [[ "${names[*]:0:${#sizes[@]}}" == *"${letters:k:1}"* ]] ||
          die "torus '$shape_text': '${letters:k:1}' in wrap= is not one of its dimensions"
      done
      ;;
    *) die "up: layout '$layout' is not switch or torus" ;;
  esac
  while (($#)); do
    case "$1" in
      --hosts) [ "$layout" = switch ] || die "--hosts is for the switch layout (a torus has as many hosts as chips)"; n=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --share)
        [ -d "${2:-}" ] || die "--share '${2:-}': not a folder on this machine"
        shared+=("$(cd "$2" && pwd -P)"); shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || die "--hosts '$n': expected 1 to 64 hosts"
  rate_bytes "$rate" >/dev/null
  check_delay
  mkdir -p "$state"
  trap 'echo "cluster.sh: up failed; removing what it made" >&2; cmd_down >/dev/null 2>&1' ERR
  : >"$state/etc-hosts"
  printf '127.0.0.1 localhost\n' >>"$state/etc-hosts"
  for ((i = 0; i < n; ++i)); do printf '%s h%d\n' "$(addr $i)" $i >>"$state/etc-hosts"; done
  echo "$n" >"$state/hosts"
  printf '%s\n' "${shared[@]}" >"$state/shared"
  for ((i = 0; i < n; ++i)); do make_host $i; done
  if [ "$layout" = switch ]; then up_switch; else up_torus; fi
  echo "$layout ${shape_text:-$n hosts} rate=$rate${delay:+ delay=$delay}" >"$state/layout"
  trap - ERR
  echo "cluster.sh: up: $(cat "$state/layout"): hosts h0..h$((n - 1)) at $subnet.1-$n"
}

# Each host has a private /tmp and /dev/shm: a path there is not on the hosts unless it lies in
# a shared folder. Refuse before launching, rather than let mpirun fail on every host with
# "could not access or execute an executable".
visible_on_hosts() {
  local path=$1 what=$2
  nsenter -t "$(cat "$state/h0/pid")" -m -- test -e "$path" && return 0
  die "run: $what $path is not visible on the emulated hosts: each host has its own /tmp and /dev/shm, and only these folders are shared: $(tr '\n' ' ' <"$state/shared")(the repository, \$TOROID_BUILD_DIR and each --share). Bring the cluster up with --share <folder> (or TOROID_BUILD_DIR=<build tree>), or build inside the repository."
}

# The mpirun line that runs the same job on real hosts: a hostfile instead of the emulated hosts,
# and none of the settings only the emulation needs (cluster-rsh.sh, the hosts' subnet, yielding).
real_command() {
  local per=$1 np=$2 shown=()
  shift 2
  for a in "$@"; do shown+=("$(printf '%q' "$a")"); done
  echo "cluster.sh: on real hosts: mpirun --hostfile HOSTS -np $np ${shown[*]}   (HOSTS: one line 'NAME slots=$per' per host)"
}

# The arguments of `run` and `command`: [--ranks-per-host K] [--np N] [mpirun options] --
# program args. Sets per, np (hosts x K unless given), opts and prog.
parse_job() {
  local what=$1
  shift
  per=1 np="" opts=() prog=()
  while (($#)) && [ "$1" != -- ]; do
    case "$1" in
      --ranks-per-host) per=$2; shift 2 ;;
      --np) np=$2; shift 2 ;;
      *) opts+=("$1"); shift ;;
    esac
  done
  [ "${1:-}" = -- ] || die "$what: expected '--' before the program"
  shift
  [ $# -gt 0 ] || die "$what: no program after '--'"
  prog=("$@")
  if [ -z "$np" ]; then
    (($(hosts) > 0)) || die "$what: no cluster is up to count hosts from; give --np N"
    np=$(($(hosts) * per))
  fi
}

cmd_run() {
  [ -e "$state/hosts" ] || die "no cluster is up ('scripts/cluster.sh up ...' first)"
  local per np opts prog n
  n=$(hosts)
  parse_job run "$@"
  set -- "${prog[@]}"
  visible_on_hosts "$PWD" "the working folder"
  [[ "$1" != */* ]] || visible_on_hosts "$1" "the program"
  : >"$state/hostfile"
  for ((i = 0; i < n; ++i)); do echo "h$i slots=$per" >>"$state/hostfile"; done
  local launcher
  launcher=$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "${TOROID_BUILD_DIR:-$root/build}/CMakeCache.txt" 2>/dev/null || true)
  # The same job on real hosts (docs/hosts.md), shown to a person at a terminal; scripts and
  # tests that read the job's output get the job's output only (`command` prints it on demand).
  [ ! -t 2 ] || real_command "$per" "$np" "${opts[@]}" "$@" >&2
  # mpirun runs on h0, like a login node that is also the first compute node.
  TOROID_CLUSTER_DIR=$state OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nsenter -t "$(cat "$state/h0/pid")" -n -u -m --wd="$PWD" -- "${launcher:-mpirun}" \
      --hostfile "$state/hostfile" -np "$np" \
      --mca plm_rsh_agent "$root/scripts/cluster-rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
      --mca btl tcp,self,vader --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24" \
      --mca oob_tcp_keepalive_time 4 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3 \
      --mca mpi_yield_when_idle 1 \
      --bind-to none --oversubscribe "${opts[@]}" "$@"
}

cmd_command() {
  local per np opts prog
  parse_job command "$@"
  real_command "$per" "$np" "${opts[@]}" "${prog[@]}"
}

cmd_exec() {
  local h=${1:-}; shift || true
  [ "${1:-}" = -- ] && shift
  [ -f "$state/h${h#h}/pid" ] || die "exec: no host '$h'"
  nsenter -t "$(cat "$state/h${h#h}/pid")" -n -u -m --wd="$PWD" -- "$@"
}

cmd_pids() {
  local h=${1:-} name=${2:-}
  [ -f "$state/h${h#h}/pid" ] || die "pids: no host '$h'"
  for pid in $(ip netns pids "$(host_ns "${h#h}")" 2>/dev/null); do
    [ -z "$name" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${name:0:15}" ] && echo "$pid"
  done
  return 0
}

cmd_status() {
  if [ ! -e "$state/hosts" ]; then echo "no cluster is up"; return 0; fi
  echo "cluster: $(cat "$state/layout" 2>/dev/null || echo '(being set up)')"
  for ((i = 0; i < $(hosts); ++i)); do
    local ns
    ns=$(host_ns $i)
    printf 'h%d %s: processes %s; links' $i "$(addr $i)" "$(ip netns pids "$ns" 2>/dev/null | wc -l)"
    ip -n "$ns" -br link 2>/dev/null | awk '$1 != "lo" && $1 != "host" {printf " %s(%s)", $1, $2}'
    echo
  done
}

# The network namespaces this script makes: hosts, the switch, the netem probe.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^($prefix[0-9]+|toroid-sw|toroid-probe)$" || true
}

cmd_down() {
  for ns in $(our_namespaces); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  for pidfile in "$state"/h*/pid; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  done
  sleep 0.2
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$state"
  echo "cluster.sh: down"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  run) shift; cmd_run "$@" ;;
  command) shift; cmd_command "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  pids) shift; cmd_pids "$@" ;;
  status) cmd_status ;;
  down) cmd_down ;;
  *) die "usage: cluster.sh up switch|torus XxY[xZ..][:wrap=..] [--hosts N] [--rate R] [--delay D] | run [--ranks-per-host K] [mpirun options] -- program args | command [same as run] | exec HOST -- cmd | status | down" ;;
esac
