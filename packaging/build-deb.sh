#!/bin/bash
# packaging/build-deb.sh [--head] [--out DIR] - builds the Debian package
# postgresql-15-gpuhash from debian/ (debhelper with pg_buildext's PGXS
# sequence) with dpkg-buildpackage -b -us -uc, in a copy of the project in a
# temporary directory, so that the tree stays clean and the package lands in
# a known place: DIR (default dist/ in the project root) receives the .deb,
# its -dbgsym, the .buildinfo, the .changes and build.log.  `make deb` runs it.
#
#   packaging/build-deb.sh          the working tree (tracked and untracked,
#                                   not ignored, files: git ls-files)
#   packaging/build-deb.sh --head   the committed tree (git archive HEAD)
#   packaging/build-deb.sh --out DIR
#
# CUDA is taken from the environment, as debian/rules says: NVCC, else
# $CUDA_HOME/bin/nvcc when CUDA_HOME is set, else nvcc on PATH or in
# /usr/local/cuda; with no nvcc the package is built CPU-only (the
# package's Gpuhash-Build field, printed at the end, says which).
# GPUHASH_CUDA=yes makes a missing nvcc an error, GPUHASH_CUDA=no builds
# CPU-only all the same.  The build dependencies (debian/control's
# Build-Depends) are installed with apt-get build-dep when missing, as root;
# otherwise it names them and stops.  GPUHASH_DEB_JOBS: parallel make jobs
# (default: the number of CPUs).
set -uo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
tree=worktree out=$src/dist
while [ $# -gt 0 ]; do
  case $1 in
    --head) tree=head ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done

say() { printf '== %s\n' "$*"; }
die() { echo "build-deb.sh: $*" >&2; exit 1; }
APT=(apt-get -q -y -o DPkg::Lock::Timeout=600)

command -v git >/dev/null || die "needs git (it copies the project with git archive / git ls-files)"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || die "$src is not a git checkout"
if ! command -v dpkg-buildpackage >/dev/null; then
  [ "$(id -u)" -eq 0 ] || die "dpkg-buildpackage is missing: apt-get install dpkg-dev"
  say "installing dpkg-dev"
  DEBIAN_FRONTEND=noninteractive "${APT[@]}" install dpkg-dev >/dev/null ||
    die "apt-get could not install dpkg-dev"
fi

# the package's upstream version is the extension's: debian/changelog,
# META.json and gpuhash.control must agree
version=$(cd "$src" && dpkg-parsechangelog -S Version) || die "cannot read debian/changelog"
upstream=${version%-*}
meta=$(sed -n 's/^   "version": "\(.*\)",$/\1/p' "$src/META.json" | head -1)
control=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$src/gpuhash.control")
[ "$upstream" = "$meta" ] ||
  die "debian/changelog's version $version is not META.json's $meta: add a debian/changelog entry (dch -v $meta-1)"
case $upstream in
  "$control"|"$control".*) ;;
  *) die "debian/changelog's version $version does not match gpuhash.control's default_version $control" ;;
esac

mkdir -p "$out" || die "cannot make $out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/gpuhash-deb.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$work"' EXIT
trap 'echo "build-deb.sh: interrupted" >&2; exit 130' INT TERM HUP
tsrc=$work/gpuhash-$upstream
mkdir "$tsrc"
if [ "$tree" = head ]; then
  git -C "$src" archive --format=tar HEAD | tar -C "$tsrc" -xf - || die "git archive failed"
  what="committed HEAD $(git -C "$src" rev-parse --short HEAD)"
else
  (cd "$src" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf -) | tar -C "$tsrc" -xf - || die "copying the working tree failed"
  what="working tree"
fi
[ -x "$tsrc/debian/rules" ] || die "no debian/rules in the $what"
say "building gpuhash $version from the $what in $tsrc"

if ! (cd "$tsrc" && dpkg-checkbuilddeps) 2>"$work/builddeps"; then
  cat "$work/builddeps" >&2
  [ "$(id -u)" -eq 0 ] || die "install the build dependencies above (or run as root)"
  say "installing the build dependencies (apt-get build-dep)"
  export DEBIAN_FRONTEND=noninteractive
  if ! "${APT[@]}" build-dep "$tsrc" >"$work/apt.log" 2>&1; then
    "${APT[@]}" update >>"$work/apt.log" 2>&1
    "${APT[@]}" build-dep "$tsrc" >>"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; die "apt-get build-dep failed"; }
  fi
fi

jobs=${GPUHASH_DEB_JOBS:-$(nproc 2>/dev/null || echo 1)}
log=$out/build.log
say "dpkg-buildpackage -b -us -uc -j$jobs (log: $log)"
start=$SECONDS
if ! (cd "$tsrc" && dpkg-buildpackage -b -us -uc -j"$jobs") >"$log" 2>&1; then
  tail -30 "$log"
  die "dpkg-buildpackage failed (log: $log)"
fi

# the new package replaces the old ones in $out
rm -f "$out"/postgresql-*-gpuhash*_*.deb "$out"/postgresql-*-gpuhash*_*.ddeb \
  "$out"/gpuhash_*.buildinfo "$out"/gpuhash_*.changes
shopt -s nullglob
built=("$work"/*.deb "$work"/*.ddeb "$work"/*.buildinfo "$work"/*.changes)
[ ${#built[@]} -gt 0 ] || die "dpkg-buildpackage made no package (log: $log)"
mv "${built[@]}" "$out/"
for deb in "$out"/postgresql-*-gpuhash_*.deb; do
  say "$deb ($(du -h "$deb" | cut -f1)), Gpuhash-Build: $(dpkg-deb -f "$deb" Gpuhash-Build)"
  dpkg-deb -c "$deb" | awk '$NF ~ /(\.so|\.control|\.sql)$/ { print "   " $NF }'
done
say "built in $((SECONDS - start))s"
