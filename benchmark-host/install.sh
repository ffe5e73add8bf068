#!/usr/bin/env bash
# Installs perf-host on a benchmark host (Debian or Ubuntu, as root), from a checkout:
#
#   sudo benchmark-host/install.sh --ci-key "ssh-ed25519 AAAA… perf-gate-ci"
#
# It creates two users: CI_USER, the SSH login the CI key may use, which owns the state and
# can run nothing but perf-host; and SERVICE_USER, which the services (code from pull
# requests) run as and which cannot write the state. It installs perf-host with the three
# capabilities it needs to start and stop services as SERVICE_USER (setuid, setgid, kill),
# the authorized_keys line with the forced command, the systemd units where systemd runs,
# and prints the host key to pin.
set -euo pipefail

ROOT=/var/lib/perf-gate
PREFIX=/usr/local/lib/perf-gate
CI_USER=perf-gate-ci
SERVICE_USER=perf-gate
CHAMPION_PORT=8001
CHALLENGER_PORT=8002
CI_KEY=""
SYSTEMD=auto

usage() { sed -n '2,12p' "$0"; echo "options: --ci-key KEY --root DIR --prefix DIR --ci-user U --service-user U --champion-port N --challenger-port N --no-systemd"; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ci-key) CI_KEY=$2; shift 2 ;;
    --root) ROOT=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --ci-user) CI_USER=$2; shift 2 ;;
    --service-user) SERVICE_USER=$2; shift 2 ;;
    --champion-port) CHAMPION_PORT=$2; shift 2 ;;
    --challenger-port) CHALLENGER_PORT=$2; shift 2 ;;
    --no-systemd) SYSTEMD=no; shift ;;
    *) usage ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
case "$CI_KEY" in
  ssh-ed25519\ *|ecdsa-sha2-*|ssh-rsa\ *) ;;
  *) echo "install.sh: --ci-key must be the CI's public key line (ssh-ed25519 AAAA…)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)

# Always rebuild when Go is here (a no-op when nothing changed), so a stale bin/ never ships.
if command -v go >/dev/null; then
  make -s -C "$here"
elif [ ! -x "$here/bin/perf-host" ]; then
  echo "install.sh: build first (make -C benchmark-host) or install Go 1.26" >&2
  exit 1
fi
command -v setcap >/dev/null || { apt-get update -qq && apt-get install -y -qq libcap2-bin >/dev/null; }
[ -x /usr/sbin/sshd ] || { apt-get update -qq && apt-get install -y -qq openssh-server >/dev/null; }

id "$SERVICE_USER" >/dev/null 2>&1 ||
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$SERVICE_USER"
# sshd runs a forced command through the login shell, so CI_USER needs a real one.
id "$CI_USER" >/dev/null 2>&1 ||
  useradd --system --create-home --home-dir "/home/$CI_USER" --shell /bin/sh "$CI_USER"
# '*' (no password) rather than useradd's '!' (locked): sshd refuses locked accounts even
# for key logins when PAM is off.
usermod -p '*' "$CI_USER"

install -d -m 0755 "$PREFIX"
install -m 0755 "$here/bin/perf-host" "$here/bin/loadgen" "$PREFIX/"
setcap cap_setuid,cap_setgid,cap_kill+ep "$PREFIX/perf-host"
install -d -o "$CI_USER" -g "$CI_USER" -m 0755 "$ROOT"

forced="$PREFIX/perf-host ssh --root $ROOT --service-user $SERVICE_USER --champion-port $CHAMPION_PORT --challenger-port $CHALLENGER_PORT"
line="restrict,command=\"$forced\" $CI_KEY"
home=$(getent passwd "$CI_USER" | cut -d: -f6)
install -d -o "$CI_USER" -g "$CI_USER" -m 0700 "$home/.ssh"
touch "$home/.ssh/authorized_keys"
grep -qxF "$line" "$home/.ssh/authorized_keys" || echo "$line" >>"$home/.ssh/authorized_keys"
chown "$CI_USER:$CI_USER" "$home/.ssh/authorized_keys"
chmod 0600 "$home/.ssh/authorized_keys"

if [ "$SYSTEMD" = auto ] && [ -d /run/systemd/system ]; then
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

echo
echo "authorized_keys line for $CI_USER (installed in $home/.ssh/authorized_keys):"
echo "  $line"
echo
echo "Pin this host key in the action's known-hosts input (replace HOST with the address CI uses):"
for k in /etc/ssh/ssh_host_ed25519_key.pub; do
  [ -f "$k" ] && echo "  HOST $(cut -d' ' -f1,2 "$k")"
done
echo
echo "Next: deploy and promote the first champion, e.g. with the perf-promote workflow, or"
echo "  ssh $CI_USER@HOST 'deploy champion SHA' < build.tar.gz"
echo "  echo '{\"command\":[\"./start\"]}' | ssh $CI_USER@HOST 'promote SHA'"
