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
# It creates two users: CI_USER, the SSH login the CI key may use, which owns the state and
# can run nothing but perf-host; and SERVICE_USER, which the services (code from pull
# requests) run as and which cannot write the state. It installs perf-host with the three
# capabilities it needs to start and stop services as SERVICE_USER (setuid, setgid, kill),
# the authorized_keys line with the forced command, the systemd units where systemd runs,
# and prints the host key to pin.
#
# options: --ci-key KEY (required)  --root DIR  --prefix DIR  --ci-user USER  --service-user USER
#          --champion-port N  --challenger-port N  --no-systemd
#          --release VERSION [--download-url URL]  --archive FILE [--sums FILE]
set -euo pipefail

ROOT=/var/lib/perf-gate
PREFIX=/usr/local/lib/perf-gate
CI_USER=perf-gate-ci
SERVICE_USER=perf-gate
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
      -h | --help) usage ;;
      --release | --download-url | --archive | --sums | --ci-key | --root | --prefix | --ci-user | \
        --service-user | --champion-port | --challenger-port) [ $# -ge 2 ] || die "$1 needs a value" 2 ;;
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
      --service-user) SERVICE_USER=$2; HOST_ARGS+=("$1" "$2") ;;
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
  for user in "$CI_USER" "$SERVICE_USER"; do
    [[ $user =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "user names must match [a-z_][a-z0-9_-]{0,31}, not '$user'" 2
  done
  [ "$CI_USER" != "$SERVICE_USER" ] || die "--ci-user and --service-user must differ: services must not write the state" 2
  case "$ROOT$PREFIX" in *[!A-Za-z0-9/._-]*) die "--root and --prefix must be plain absolute paths" 2 ;; esac
  case "$ROOT" in /*) ;; *) die "--root must be an absolute path" 2 ;; esac
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
  if [ ! -x "$src/install.sh" ] || [ ! -x "$src/bin/perf-host" ] || [ ! -x "$src/bin/loadgen" ]; then
    die "$name does not hold install.sh, bin/perf-host and bin/loadgen"
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
  elif [ ! -x "$here/bin/perf-host" ] || [ ! -x "$here/bin/loadgen" ]; then
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
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

create_users() {
  id "$SERVICE_USER" >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$SERVICE_USER"
  # sshd runs a forced command through the login shell, so CI_USER needs a real one.
  id "$CI_USER" >/dev/null 2>&1 ||
    useradd --system --create-home --home-dir "/home/$CI_USER" --shell /bin/sh "$CI_USER"
  # '*' (no password) rather than useradd's '!' (locked): sshd refuses locked accounts even
  # for key logins when PAM is off.
  usermod -p '*' "$CI_USER"
}

install_binaries() {
  install -d -m 0755 "$PREFIX"
  install -m 0755 "$here/bin/perf-host" "$here/bin/loadgen" "$PREFIX/"
  setcap cap_setuid,cap_setgid,cap_kill+ep "$PREFIX/perf-host"
  install -d -o "$CI_USER" -g "$CI_USER" -m 0755 "$ROOT"
  echo "installed $("$PREFIX/perf-host" --version) in $PREFIX"
}

install_ci_key() {
  local forced="$PREFIX/perf-host ssh --root $ROOT --service-user $SERVICE_USER --champion-port $CHAMPION_PORT --challenger-port $CHALLENGER_PORT"
  local line="restrict,command=\"$forced\" $CI_KEY" home
  home=$(getent passwd "$CI_USER" | cut -d: -f6)
  install -d -o "$CI_USER" -g "$CI_USER" -m 0700 "$home/.ssh"
  touch "$home/.ssh/authorized_keys"
  grep -qxF "$line" "$home/.ssh/authorized_keys" || echo "$line" >>"$home/.ssh/authorized_keys"
  chown "$CI_USER:$CI_USER" "$home/.ssh/authorized_keys"
  chmod 0600 "$home/.ssh/authorized_keys"
  echo
  echo "authorized_keys line for $CI_USER (installed in $home/.ssh/authorized_keys):"
  echo "  $line"
}

install_systemd_units() {
  if [ "$SYSTEMD" = auto ] && [ -d /run/systemd/system ]; then
    local unit
    for unit in perf-gate-champion.service perf-gate-gc.service perf-gate-gc.timer; do
      sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@ROOT@|$ROOT|g" -e "s|@CI_USER@|$CI_USER|g" \
        -e "s|@SERVICE_USER@|$SERVICE_USER|g" -e "s|@CHAMPION_PORT@|$CHAMPION_PORT|g" \
        -e "s|@CHALLENGER_PORT@|$CHALLENGER_PORT|g" "$here/systemd/$unit" >"/etc/systemd/system/$unit"
    done
    systemctl daemon-reload
    systemctl enable --now perf-gate-gc.timer
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
  install_ci_key
  install_systemd_units
  print_next_steps
}

main "$@"
