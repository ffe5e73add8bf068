#!/usr/bin/env bash
# Installs perf-host on a benchmark host (Debian or Ubuntu, as root), from a release or a checkout:
#
#   sudo ./install.sh --release v1.2.3 --ci-key "ssh-ed25519 AAAA… perf-gate-ci"
#       downloads this machine's archive (linux-amd64 or linux-arm64) and SHA256SUMS from the
#       GitHub release, checks the archive against SHA256SUMS before anything is installed,
#       and installs it with the install.sh inside it. No Go needed.
#   sudo ./install.sh --archive perf-gate-host-v1.2.3-linux-amd64.tar.gz --ci-key "…"
#       the same from an archive already here, checked against the SHA256SUMS beside it
#       (or --sums FILE).
#   sudo benchmark-host/install.sh --ci-key "…"
#       from the directory this script is in: a checkout (built first when Go 1.26 is here),
#       or an unpacked release archive.
#
# It creates three users: CI_USER, the SSH login the CI key may use, which owns the state and
# can run nothing but perf-host; and one user per arm, CHAMPION_USER and CHALLENGER_USER, which
# the services (code from pull requests) run as: neither can read the state, the releases or
# the other arm's files, or signal the other arm. It gives perf-host a cgroup v2 subtree (one
# group per arm and one for the load generator; on a hybrid host also a subtree of the v1 memory,
# cpuset and pids hierarchies, which hold the arms' memory limit, CPUs and tasks), installs arm-exec (which
# gives each arm's programs a /tmp, /dev/shm and IPC of their own), perf-host executable by CI_USER alone
# with the capabilities it raises one operation at a time (setuid, setgid, kill, dac_override:
# see the README's security model), the authorized_keys line with the forced command, the
# systemd units where systemd runs, and prints how the arms are isolated and the host key to pin.
#
# options: --ci-key KEY (required)  --root DIR  --prefix DIR  --ci-user USER
#          --champion-user USER  --challenger-user USER  --champion-port N  --challenger-port N
#          --cgroup-name NAME  --no-cgroup  --loadgen-cpus LIST  --arm-cpus LIST  --arm-max-procs N
#          --service-ports LO-HI (the range each arm's service.ports come from; default: free ports)
#          --hold-cpus-awake (hold PM QoS cpu_dma_latency at 0 while measuring; benchmark-host/README.md)
#          --max-foreign-cores X (CPU cores other work may take during a slice before it is dropped
#          as disturbed; default 0.25: raise it only for a host with steady background work)
#          --max-idle-arm-cores X (CPU cores the arm not measured may use before a slice is invalid;
#          default 0.25)  --max-run-seconds N (the longest run a plan may ask for; default 3600)
#          --max-arm-log-bytes N (an arm's log kept per start; default 8 MiB, 0: no cap)
#          --arm-disk-bytes N (each arm's own filesystem; default 2 GiB)  --arm-memory-bytes N (default 4 GiB)
#          --no-net-isolation (no nftables rules keeping each arm to its own ports)
#          --no-systemd  --release VERSION [--download-url URL]  --archive FILE [--sums FILE]
set -euo pipefail

ROOT=/var/lib/perf-gate
PREFIX=/usr/local/lib/perf-gate
CI_USER=perf-gate-ci
CHAMPION_USER=perf-gate-champion
CHALLENGER_USER=perf-gate-challenger
CGROUP_NAME=perf-gate
CGROUP=auto
LOADGEN_CPUS=""
ARM_CPUS=""
ARM_MAX_PROCS=1024
ARM_DISK_BYTES=2147483648
ARM_MEMORY_BYTES=4294967296
NET_ISOLATION=yes
SERVICE_PORTS=""
MAX_FOREIGN_CORES=""
MAX_IDLE_ARM_CORES=""
MAX_RUN_SECONDS=""
MAX_ARM_LOG_BYTES=""
HOLD_CPUS=no
CHAMPION_PORT=8001
CHALLENGER_PORT=8002
CI_KEY=""
SYSTEMD=auto
RELEASE=""
DOWNLOAD_URL=""
ARCHIVE=""
SUMS=""
# The options that describe the host, handed on to the install.sh inside a release archive.
HOST_ARGS=()

here=$(cd "$(dirname "$0")" && pwd)

die() { echo "install.sh: $1" >&2; exit "${2:-1}"; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --no-systemd) SYSTEMD=no; HOST_ARGS+=("$1"); shift; continue ;;
      --no-cgroup) CGROUP=none; HOST_ARGS+=("$1"); shift; continue ;;
      --hold-cpus-awake) HOLD_CPUS=yes; HOST_ARGS+=("$1"); shift; continue ;;
      --no-net-isolation) NET_ISOLATION=no; HOST_ARGS+=("$1"); shift; continue ;;
      --service-user) die "--service-user is replaced by --champion-user and --challenger-user (one user per arm)" 2 ;;
      -h | --help) usage ;;
      --release | --download-url | --archive | --sums | --ci-key | --root | --prefix | --ci-user | \
        --champion-user | --challenger-user | --champion-port | --challenger-port | --cgroup-name | \
        --loadgen-cpus | --arm-cpus | --arm-max-procs | --service-ports | --max-foreign-cores | --arm-disk-bytes | --arm-memory-bytes | \
        --max-idle-arm-cores | --max-run-seconds | --max-arm-log-bytes) [ $# -ge 2 ] || die "$1 needs a value" 2 ;;
      *) echo "install.sh: unknown argument '$1'" >&2; usage ;;
    esac
    case "$1" in
      --release) RELEASE=$2 ;;
      --download-url) DOWNLOAD_URL=$2 ;;
      --archive) ARCHIVE=$2 ;;
      --sums) SUMS=$2 ;;
      --ci-key) CI_KEY=$2; HOST_ARGS+=("$1" "$2") ;;
      --root) ROOT=$2; HOST_ARGS+=("$1" "$2") ;;
      --prefix) PREFIX=$2; HOST_ARGS+=("$1" "$2") ;;
      --ci-user) CI_USER=$2; HOST_ARGS+=("$1" "$2") ;;
      --champion-user) CHAMPION_USER=$2; HOST_ARGS+=("$1" "$2") ;;
      --challenger-user) CHALLENGER_USER=$2; HOST_ARGS+=("$1" "$2") ;;
      --cgroup-name) CGROUP_NAME=$2; HOST_ARGS+=("$1" "$2") ;;
      --loadgen-cpus) LOADGEN_CPUS=$2; HOST_ARGS+=("$1" "$2") ;;
      --arm-cpus) ARM_CPUS=$2; HOST_ARGS+=("$1" "$2") ;;
      --arm-max-procs) ARM_MAX_PROCS=$2; HOST_ARGS+=("$1" "$2") ;;
      --arm-disk-bytes) ARM_DISK_BYTES=$2; HOST_ARGS+=("$1" "$2") ;;
      --arm-memory-bytes) ARM_MEMORY_BYTES=$2; HOST_ARGS+=("$1" "$2") ;;
      --service-ports) SERVICE_PORTS=$2; HOST_ARGS+=("$1" "$2") ;;
      --max-foreign-cores) MAX_FOREIGN_CORES=$2; HOST_ARGS+=("$1" "$2") ;;
      --max-idle-arm-cores) MAX_IDLE_ARM_CORES=$2; HOST_ARGS+=("$1" "$2") ;;
      --max-run-seconds) MAX_RUN_SECONDS=$2; HOST_ARGS+=("$1" "$2") ;;
      --max-arm-log-bytes) MAX_ARM_LOG_BYTES=$2; HOST_ARGS+=("$1" "$2") ;;
      --champion-port) CHAMPION_PORT=$2; HOST_ARGS+=("$1" "$2") ;;
      --challenger-port) CHALLENGER_PORT=$2; HOST_ARGS+=("$1" "$2") ;;
    esac
    shift 2
  done
}

validate_args() {
  [ "$(id -u)" -eq 0 ] || die "run as root"
  case "$CI_KEY" in
    ssh-ed25519\ * | ecdsa-sha2-* | ssh-rsa\ *) ;;
    *) die "--ci-key must be the CI's public key line (ssh-ed25519 AAAA…)" 2 ;;
  esac
  local port user
  for port in "$CHAMPION_PORT" "$CHALLENGER_PORT"; do
    if ! [[ $port =~ ^[0-9]{1,5}$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
      die "ports must be 1-65535, not '$port'" 2
    fi
  done
  [ "$CHAMPION_PORT" != "$CHALLENGER_PORT" ] || die "--champion-port and --challenger-port must differ" 2
  for user in "$CI_USER" "$CHAMPION_USER" "$CHALLENGER_USER"; do
    [[ $user =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "user names must match [a-z_][a-z0-9_-]{0,31}, not '$user'" 2
  done
  for user in "$CHAMPION_USER" "$CHALLENGER_USER"; do
    if [ "$user" = "$CI_USER" ] || [ "$user" = root ]; then
      die "an arm's user must be neither root nor --ci-user: the arms must not write the state" 2
    fi
  done
  [ "$CHAMPION_USER" != "$CHALLENGER_USER" ] || die "--champion-user and --challenger-user must differ: one user per arm" 2
  [[ $CGROUP_NAME =~ ^[A-Za-z0-9._-]{1,64}$ ]] || die "--cgroup-name must be 1-64 characters of [A-Za-z0-9._-]" 2
  [[ $LOADGEN_CPUS$ARM_CPUS =~ ^[0-9,-]*$ ]] || die "--loadgen-cpus and --arm-cpus are CPU lists such as 0-1,8-9" 2
  [[ $ARM_MAX_PROCS =~ ^[1-9][0-9]{1,6}$ ]] || die "--arm-max-procs must be a number of tasks (10 or more)" 2
  [[ $ARM_DISK_BYTES =~ ^[1-9][0-9]{7,14}$ ]] || die "--arm-disk-bytes must be a size in bytes of 10 MB or more, such as 2147483648" 2
  [[ $ARM_MEMORY_BYTES =~ ^(0|[1-9][0-9]{7,14})$ ]] || die "--arm-memory-bytes must be a size in bytes of 10 MB or more (0: no limit), such as 4294967296" 2
  [[ $SERVICE_PORTS =~ ^([0-9]{1,5}-[0-9]{1,5})?$ ]] || die "--service-ports is a range of ports such as 18100-18199" 2
  [[ $MAX_FOREIGN_CORES =~ ^([0-9]{1,3}(\.[0-9]{1,3})?)?$ ]] || die "--max-foreign-cores is a number of CPU cores such as 0.25" 2
  [[ $MAX_IDLE_ARM_CORES =~ ^([0-9]{1,3}(\.[0-9]{1,3})?)?$ ]] || die "--max-idle-arm-cores is a number of CPU cores such as 0.25" 2
  [[ $MAX_RUN_SECONDS =~ ^([1-9][0-9]{1,5})?$ ]] || die "--max-run-seconds is a number of seconds (10 or more) such as 3600" 2
  [[ $MAX_ARM_LOG_BYTES =~ ^(0|[1-9][0-9]{4,11})?$ ]] || die "--max-arm-log-bytes is a size in bytes of 10 kB or more (0: no cap), such as 8388608" 2
  case "$ROOT$PREFIX" in *[!A-Za-z0-9/._-]*) die "--root and --prefix must be plain absolute paths" 2 ;; esac
  case "$ROOT" in /*) ;; *) die "--root must be an absolute path" 2 ;; esac
  # The arms' homes are under ROOT, and each arm's programs see /tmp, /var/tmp, /run/lock and
  # /dev/shm of their own: a home under one of them would be out of their sight.
  case "$ROOT/" in /tmp/* | /var/tmp/* | /run/lock/* | /dev/shm/*) die "--root must not be under /tmp, /var/tmp, /run/lock or /dev/shm (the arms get their own there)" 2 ;; esac
  case "$PREFIX" in /*) ;; *) die "--prefix must be an absolute path" 2 ;; esac
  if [ -n "$RELEASE" ] && [ -n "$ARCHIVE" ]; then die "--release and --archive exclude each other" 2; fi
  if [ -z "$RELEASE" ] && [ -n "$DOWNLOAD_URL" ]; then die "--download-url goes with --release" 2; fi
  if [ -z "$RELEASE$ARCHIVE" ] && [ -n "$SUMS" ]; then die "--sums goes with --release or --archive" 2; fi
  if [ -n "$RELEASE" ] && ! [[ $RELEASE =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
    die "--release must be a release tag like v1.2.3, not '$RELEASE'" 2
  fi
  return 0
}

# --- from a release archive -----------------------------------------------------------------

# This machine's name in release archive names.
host_arch() {
  case "$(uname -m)" in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "no release is built for $(uname -m) (only x86_64 and aarch64): build from a checkout with Go" ;;
  esac
}

download() {
  echo "install.sh: downloading $1"
  # https only, redirects included; plain http only to this machine (a mirror under test).
  local proto='=https'
  case "$1" in http://127.0.0.1[:/]* | http://localhost[:/]*) proto='=http' ;; esac
  curl --fail --silent --show-error --location --proto "$proto" --proto-redir '=https' \
    --retry 3 --output "$2" "$1" || die "could not download $1"
}

# verify_archive FILE SUMS refuses FILE unless SUMS lists its name with its SHA-256.
verify_archive() {
  local name want got
  name=$(basename "$1")
  [ -f "$2" ] || die "$2: no SHA256SUMS to check $name against (give --sums FILE)"
  want=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }' "$2")
  [ -n "$want" ] || die "$name is not listed in $2: refusing an archive the release does not vouch for; nothing was installed"
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$want" ] ||
    die "$1 does not match $2 (SHA-256 $got, expected $want): the archive is corrupt or was tampered with; nothing was installed"
  echo "install.sh: $name matches SHA256SUMS (sha256 $got)"
}

UNPACKED=""
install_from_release() {
  local name arch
  UNPACKED=$(mktemp -d)
  trap 'rm -rf "$UNPACKED"' EXIT
  if [ -n "$RELEASE" ]; then
    command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }
    local url=${DOWNLOAD_URL:-https://github.com/perf-gate/perf-gate/releases/download/$RELEASE}
    name=perf-gate-host-$RELEASE-linux-$(host_arch).tar.gz
    ARCHIVE=$UNPACKED/$name
    download "${url%/}/$name" "$ARCHIVE"
    if [ -z "$SUMS" ]; then
      SUMS=$UNPACKED/SHA256SUMS
      download "${url%/}/SHA256SUMS" "$SUMS"
    fi
  fi
  [ -f "$ARCHIVE" ] || die "$ARCHIVE: no such archive"
  name=$(basename "$ARCHIVE")
  [[ $name =~ ^perf-gate-host-v[0-9][0-9A-Za-z.-]*-linux-(amd64|arm64)\.tar\.gz$ ]] ||
    die "$name is not a release archive name (perf-gate-host-VERSION-linux-ARCH.tar.gz)" 2
  arch=${BASH_REMATCH[1]}
  [ "$arch" = "$(host_arch)" ] || die "$name is built for linux-$arch; this machine needs linux-$(host_arch)" 2
  verify_archive "$ARCHIVE" "${SUMS:-$(dirname "$ARCHIVE")/SHA256SUMS}"
  tar -xzf "$ARCHIVE" -C "$UNPACKED" --no-same-owner
  local src=$UNPACKED/${name%.tar.gz}
  if [ ! -x "$src/install.sh" ] || [ ! -x "$src/bin/perf-host" ] || [ ! -x "$src/bin/loadgen" ] || [ ! -x "$src/bin/arm-exec" ]; then
    die "$name does not hold install.sh, bin/perf-host, bin/loadgen and bin/arm-exec"
  fi
  # The archive's own install.sh installs it, so the install steps always match the binaries.
  "$src/install.sh" "${HOST_ARGS[@]}"
}

# --- from this directory ----------------------------------------------------------------------

# binaries_here builds a checkout (a no-op when nothing changed, so a stale bin/ never ships)
# or takes the bin/ of an unpacked release.
binaries_here() {
  if [ -f "$here/go.mod" ] && command -v go >/dev/null; then
    make -s -C "$here"
  elif [ ! -x "$here/bin/perf-host" ] || [ ! -x "$here/bin/loadgen" ] || [ ! -x "$here/bin/arm-exec" ]; then
    local v
    v=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$here/../package.json" 2>/dev/null || true)
    die "no Go here to build this checkout: install a release instead (no Go needed):
  sudo $0 --release v${v:-X.Y.Z} --ci-key \"$CI_KEY\"
or install Go 1.26 and run this again"
  fi
  return 0
}

ensure_packages() {
  local missing=()
  command -v setcap >/dev/null || missing+=(libcap2-bin)
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  if [ "$NET_ISOLATION" = yes ]; then [ -x /usr/sbin/nft ] || missing+=(nftables); fi
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  # The arms' CPU profiles (the config's profile): without perf a run says why it has none.
  command -v perf >/dev/null || missing+=(linux-perf)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

create_users() {
  local user
  for user in "$CHAMPION_USER" "$CHALLENGER_USER"; do
    # A group of its own, no home, no shell, no supplementary groups.
    id "$user" >/dev/null 2>&1 ||
      useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
  done
  # sshd runs a forced command through the login shell, so CI_USER needs a real one.
  id "$CI_USER" >/dev/null 2>&1 ||
    useradd --system --create-home --home-dir "/home/$CI_USER" --shell /bin/sh "$CI_USER"
  # '*' (no password) rather than useradd's '!' (locked): sshd refuses locked accounts even
  # for key logins when PAM is off.
  usermod -p '*' "$CI_USER"
}

install_binaries() {
  install -d -m 0755 "$PREFIX"
  install -m 0755 "$here/bin/loadgen" "$PREFIX/"
  # arm-exec carries no privilege of its own: perf-host starts each arm's program through it, as
  # the arm's user, in namespaces of the program's own (internal/armns).
  install -m 0755 "$here/bin/arm-exec" "$PREFIX/"
  # perf-host carries capabilities: only CI_USER (its group) and root may run it, never an arm.
  # They are permitted, not effective (+p): perf-host raises one on one thread for one
  # operation (internal/privilege). dac_override lets it start a process into its cgroup
  # subtree from outside it (the kernel asks for write access to the root cgroup's cgroup.procs);
  # net_admin goes, as an ambient capability, to the one nft process that rewrites an arm's
  # packet filter when the arm starts (internal/netguard); perfmon and sys_ptrace to the one perf
  # record process that samples the arms' cgroups during a run that asks for profiles
  # (internal/profile; docs/design/0021-profiles.md).
  install -m 0750 -o root -g "$(id -gn "$CI_USER")" "$here/bin/perf-host" "$PREFIX/"
  setcap cap_setuid,cap_setgid,cap_kill,cap_dac_override,cap_net_admin,cap_sys_ptrace,cap_perfmon+p "$PREFIX/perf-host"
  echo "installed $("$PREFIX/perf-host" --version) in $PREFIX"
}

# --- isolated arms: private state, one directory per arm, the cgroup subtree -----------------

# The state is CI_USER's alone: the root can be traversed (0711) so that each arm reaches its own
# directory under arms/; perf-host keeps everything else 0700/0600 (and tightens a root laid out
# by an older install the first time it runs).
make_state_dirs() {
  install -d -o "$CI_USER" -g "$CI_USER" -m 0711 "$ROOT" "$ROOT/arms"
  chmod 0711 "$ROOT"
  install -d -o "$CHAMPION_USER" -g "$(id -gn "$CHAMPION_USER")" -m 0700 "$ROOT/arms/champion"
  install -d -o "$CHALLENGER_USER" -g "$(id -gn "$CHALLENGER_USER")" -m 0700 "$ROOT/arms/challenger"
}

# make_arm_disks gives each arm a filesystem of its own of ARM_DISK_BYTES (an ext4 image on a
# loop device, mounted on its home, nosuid and nodev): an arm that fills its disk fills only its
# own, never the host's state. A size changed since the last install makes the image anew.
make_arm_disks() {
  local a user img home size
  install -d -o root -g root -m 0700 "$ROOT/arm-disks"
  for a in champion challenger; do
    if [ "$a" = champion ]; then user=$CHAMPION_USER; else user=$CHALLENGER_USER; fi
    img=$ROOT/arm-disks/$a.ext4
    home=$ROOT/arms/$a
    size=$(stat -c %s "$img" 2>/dev/null || echo 0)
    if mountpoint -q "$home"; then
      [ "$size" = "$ARM_DISK_BYTES" ] && { chown "$user:$(id -gn "$user")" "$home"; chmod 0700 "$home"; continue; }
      umount "$home"
    fi
    if [ "$size" != "$ARM_DISK_BYTES" ]; then
      rm -f "$img"
      truncate -s "$ARM_DISK_BYTES" "$img"
      mkfs.ext4 -q -F -m 0 "$img"
    fi
    mount -o loop,nosuid,nodev "$img" "$home"
    rmdir "$home/lost+found" 2>/dev/null || true
    chown "$user:$(id -gn "$user")" "$home"
    chmod 0700 "$home"
    if [ "$SYSTEMD" = auto ] && [ -d /run/systemd/system ] && ! grep -qF "$img " /etc/fstab; then
      echo "$img $home ext4 loop,nosuid,nodev 0 0" >>/etc/fstab
    fi
  done
}

# make_cgroup sets CGROUP to the subtree perf-host gets ("" for none) and, without systemd,
# makes it and gives it to CI_USER as systemd would delegate it. On a hybrid host (the v2 mount
# has no memory controller), it also makes CGROUP_V1: a subtree of the v1 memory, cpuset and pids
# hierarchies, CI_USER's, where perf-host puts each arm's memory limit, CPUs and task bound.
make_cgroup() {
  local mount c
  mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
  if [ "$CGROUP" = none ] || [ -z "$mount" ]; then
    CGROUP=""
  elif [ "$SYSTEMD" = auto ] && [ -d /run/systemd/system ]; then
    # systemd owns the tree: perf-gate-cgroups.service (Delegate=yes) holds the subtree.
    CGROUP="$mount/system.slice/perf-gate-cgroups.service"
  else
    # cgroups do not survive a reboot: re-run install.sh after one (perf-host status says so).
    CGROUP="$mount/$CGROUP_NAME"
    if [ "$mount" = /sys/fs/cgroup ]; then # pure v2: let the subtree have the controllers
      for c in cpu cpuset memory pids; do
        if grep -qw "$c" "$mount/cgroup.controllers"; then
          echo "+$c" >"$mount/cgroup.subtree_control" 2>/dev/null || true
        fi
      done
    fi
    mkdir -p "$CGROUP"
    chown "$CI_USER" "$CGROUP" "$CGROUP/cgroup.procs" "$CGROUP/cgroup.subtree_control" "$CGROUP/cgroup.threads"
  fi
  if [ -n "$CGROUP" ] && ! grep -qw memory "$mount/cgroup.controllers"; then make_cgroup_v1; fi
}

CGROUP_V1=""
make_cgroup_v1() {
  local c dir f dirs=()
  for c in memory cpuset pids; do
    # The hierarchy of that controller alone, where Debian's hybrid layout mounts it.
    awk -v m="/sys/fs/cgroup/$c" '$2 == m && $3 == "cgroup"' /proc/mounts | grep -q . || continue
    dir=/sys/fs/cgroup/$c/$CGROUP_NAME
    mkdir -p "$dir"
    if [ "$c" = cpuset ]; then
      # A new cpuset has no CPUs and no memory nodes, and takes no task until it has.
      for f in cpuset.mems cpuset.cpus; do
        [ -n "$(cat "$dir/$f")" ] || cat "/sys/fs/cgroup/$c/$f" >"$dir/$f"
      done
    fi
    chown "$CI_USER" "$dir" "$dir/tasks" "$dir/cgroup.procs"
    dirs+=("$dir")
  done
  CGROUP_V1=$(IFS=,; echo "${dirs[*]}")
}

# host_flags are perf-host's flags for this host, in the forced command and the units.
host_flags() {
  local flags="--root $ROOT --champion-user $CHAMPION_USER --challenger-user $CHALLENGER_USER"
  flags+=" --champion-port $CHAMPION_PORT --challenger-port $CHALLENGER_PORT --arm-max-procs $ARM_MAX_PROCS"
  flags+=" --arm-disk-bytes $ARM_DISK_BYTES --arm-memory-bytes $ARM_MEMORY_BYTES --net-table=$(net_table)"
  if [ -n "$CGROUP" ]; then flags+=" --cgroup $CGROUP"; fi
  if [ -n "$CGROUP_V1" ]; then flags+=" --cgroup-v1 $CGROUP_V1"; fi
  if [ -n "$LOADGEN_CPUS" ]; then flags+=" --loadgen-cpus $LOADGEN_CPUS"; fi
  if [ -n "$ARM_CPUS" ]; then flags+=" --arm-cpus $ARM_CPUS"; fi
  if [ -n "$SERVICE_PORTS" ]; then flags+=" --service-ports $SERVICE_PORTS"; fi
  if [ -n "$MAX_FOREIGN_CORES" ]; then flags+=" --max-foreign-cores $MAX_FOREIGN_CORES"; fi
  if [ -n "$MAX_IDLE_ARM_CORES" ]; then flags+=" --max-idle-arm-cores $MAX_IDLE_ARM_CORES"; fi
  if [ -n "$MAX_RUN_SECONDS" ]; then flags+=" --max-run-seconds $MAX_RUN_SECONDS"; fi
  if [ -n "$MAX_ARM_LOG_BYTES" ]; then flags+=" --max-arm-log-bytes $MAX_ARM_LOG_BYTES"; fi
  if [ "$HOLD_CPUS" = yes ]; then flags+=" --hold-cpus-awake"; fi
  echo "$flags"
}

# net_table is the nftables table perf-host keeps the arms' rules in, named after the cgroup
# subtree so that two installs on one machine never share one ("" with --no-net-isolation).
net_table() {
  local name=${CGROUP_NAME//[^A-Za-z0-9_]/_}
  [[ $name =~ ^[A-Za-z] ]] || name=t_$name
  if [ "$NET_ISOLATION" = yes ]; then echo "$name"; fi
}

# print_isolation runs perf-host as CI_USER once (which tightens an older state directory and
# makes the groups) and shows how the arms are isolated on this host, checked as a run checks
# it (under the host lock: it waits for a run in flight, up to --lock-wait).
print_isolation() {
  echo
  echo "isolation on this host:"
  local report
  if report=$(su -s /bin/sh "$CI_USER" -c "$PREFIX/perf-host isolation $(host_flags)" 2>&1); then
    grep -E '"(note|method|by|network|disk|memory|private_mounts)":' <<<"$report" | sed 's/^ */  /'
  else
    echo "  not checked: $report"
  fi
  if id perf-gate >/dev/null 2>&1 && [ "$CHAMPION_USER" != perf-gate ] && [ "$CHALLENGER_USER" != perf-gate ]; then
    echo "  the single service user of an older install, perf-gate, is no longer used: userdel perf-gate once nothing runs as it"
  fi
}

# --- the CI key ---------------------------------------------------------------------------------

install_ci_key() {
  local forced
  forced="$PREFIX/perf-host ssh $(host_flags)"
  local line="restrict,command=\"$forced\" $CI_KEY" home key
  home=$(getent passwd "$CI_USER" | cut -d: -f6)
  install -d -o "$CI_USER" -g "$CI_USER" -m 0700 "$home/.ssh"
  touch "$home/.ssh/authorized_keys"
  # One line per key: an earlier install's line for this key (say, with --service-user) is
  # replaced, since sshd uses the first line that matches.
  key=$(echo "$CI_KEY" | awk '{ print $2 }')
  grep -vF " $key" "$home/.ssh/authorized_keys" >"$home/.ssh/authorized_keys.new" || true
  echo "$line" >>"$home/.ssh/authorized_keys.new"
  mv "$home/.ssh/authorized_keys.new" "$home/.ssh/authorized_keys"
  chown "$CI_USER:$CI_USER" "$home/.ssh/authorized_keys"
  chmod 0600 "$home/.ssh/authorized_keys"
  echo
  echo "authorized_keys line for $CI_USER (installed in $home/.ssh/authorized_keys):"
  echo "  $line"
}

install_systemd_units() {
  if [ "$SYSTEMD" = auto ] && [ -d /run/systemd/system ]; then
    local unit
    for unit in perf-gate-cgroups.service perf-gate-champion.service perf-gate-gc.service perf-gate-gc.timer; do
      sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@ROOT@|$ROOT|g" -e "s|@CI_USER@|$CI_USER|g" \
        -e "s|@FLAGS@|$(host_flags)|g" "$here/systemd/$unit" >"/etc/systemd/system/$unit"
    done
    systemctl daemon-reload
    if [ -n "$CGROUP" ]; then systemctl enable --now perf-gate-cgroups.service; fi
    systemctl enable --now perf-gate-gc.timer
    # A supervisor still running an older install's configuration is replaced by the next run.
    # The champion unit starts once a champion exists (after the first promote).
    systemctl enable perf-gate-champion.service
    echo "systemd: perf-gate-champion.service enabled; it serves the champion from the next boot (until then perf-host supervises it itself)."
  else
    echo "no systemd: perf-host supervises the champion itself (perf-host champion-daemon)."
  fi
}

print_next_steps() {
  echo
  echo "Pin this host key in the action's known-hosts input (replace HOST with the address CI uses):"
  local key=/etc/ssh/ssh_host_ed25519_key.pub
  if [ -f "$key" ]; then echo "  HOST $(cut -d' ' -f1,2 "$key")"; fi
  echo
  echo "Next: deploy and promote the first champion, e.g. with the perf-promote workflow, or"
  echo "  ssh $CI_USER@HOST 'deploy champion SHA' < build.tar.gz"
  echo "  echo '{\"command\":[\"./start\"]}' | ssh $CI_USER@HOST 'promote SHA'"
}

main() {
  parse_args "$@"
  validate_args
  if [ -n "$RELEASE$ARCHIVE" ]; then
    install_from_release
    return
  fi
  binaries_here
  ensure_packages
  create_users
  install_binaries
  make_state_dirs
  make_arm_disks
  make_cgroup
  install_ci_key
  install_systemd_units
  print_isolation
  print_next_steps
}

main "$@"
