#!/usr/bin/env bash
# Builds the benchmark host's release assets, exactly as .github/workflows/release.yml
# publishes them (the e2e test runs this script too):
#
#   benchmark-host/release.sh VERSION OUTDIR [ARCH...]     ARCH: amd64, arm64 (default: both)
#
# For each ARCH, OUTDIR/perf-gate-host-VERSION-linux-ARCH.tar.gz holds, under a directory of
# the same name: bin/perf-host, bin/loadgen and bin/arm-exec (static, -trimpath, VERSION
# stamped: `perf-host --version`), install.sh, systemd/, plan.schema.json, README.md
# (benchmark-host's) and LICENSE. OUTDIR/install.sh is the installer on its own, for hosts that fetch a release
# (`install.sh --release VERSION`), and OUTDIR/SHA256SUMS lists the sums of all of them.
# The archives are reproducible: the same source and VERSION give the same bytes (names
# sorted, owner 0, every mtime the commit's time, gzip without a timestamp).
set -euo pipefail
umask 022

die() { echo "release.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: release.sh VERSION OUTDIR [ARCH...]"
version=$1 outdir=$2
shift 2
[ $# -gt 0 ] || set -- amd64 arm64
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION must be a tag like v1.2.3 or v1.2.3-rc.1, not '$version'"

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
[ -f "$repo/LICENSE" ] || die "$repo/LICENSE is missing"
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

assets=()
for arch in "$@"; do
  case $arch in amd64 | arm64) ;; *) die "ARCH must be amd64 or arm64, not '$arch'" ;; esac
  name=perf-gate-host-$version-linux-$arch
  dir=$stage/$name
  mkdir -p "$dir/systemd"
  GOOS=linux GOARCH=$arch make -s -C "$here" all BIN="$dir/bin" VERSION="$version"
  install -m 0755 "$here/install.sh" "$dir/"
  install -m 0644 "$here"/systemd/* "$dir/systemd/"
  install -m 0644 "$here/README.md" "$here/contract/schema/plan.schema.json" "$repo/LICENSE" "$dir/"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage" -cf - "$name" |
    gzip -9n >"$outdir/$name.tar.gz"
  assets+=("$name.tar.gz")
done
install -m 0755 "$here/install.sh" "$outdir/install.sh"
assets+=(install.sh)
(cd "$outdir" && sha256sum -- "${assets[@]}" >SHA256SUMS)
echo "release.sh: $version in $outdir:"
sed 's/^/  /' "$outdir/SHA256SUMS"
