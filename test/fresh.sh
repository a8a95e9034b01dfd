#!/bin/bash
# test/fresh.sh [--no-cache] [--worktree] [--separate] [--deb] - proves that
# the README's two commands, `./demo.sh` and `test/run.sh`, work on a fresh
# Debian 12 machine: it bootstraps a Debian 12 (bookworm) root with
# debootstrap, installs in it only what a new machine of this kind ships,
# copies the project into /root/gpuhash and runs the two commands there as
# root, exactly as the README says, one after the other.  Exits non-zero when
# either fails and ends with "N passed, N failed" counting the two commands.
# Run it as root from the project root:
#
#   test/fresh.sh              the committed tree (git archive HEAD)
#   test/fresh.sh --worktree   the working tree instead (tracked and untracked,
#                              not ignored, files: `git ls-files`)
#   test/fresh.sh --separate   each command in its own pristine root, so that
#                              test/run.sh alone (what CI runs) installs what it
#                              needs too
#   test/fresh.sh --no-cache   bootstrap afresh, neither reading nor writing
#                              the cached image
#   test/fresh.sh --deb        the Debian package instead: build it on this
#                              host (packaging/build-deb.sh), install it in a
#                              pristine root and test the installed files
#                              there (test/deb_check.sh); with --worktree, of
#                              the working tree
#
# What a fresh machine of this kind is: Debian 12 with PostgreSQL 15's server
# and libpq-dev (so pg_config is on PATH) and a C toolchain, but without the
# server headers and PGXS (postgresql-server-dev-15), pgTAP
# (postgresql-15-pgtap), pg_prove (libtap-parser-sourcehandler-pgtap-perl),
# sqlsmith and CUDA.  The image pre-installs, on top of debootstrap's minbase
# (the packages of priority required, apt among them):
#
#   postgresql postgresql-15 postgresql-contrib libpq-dev
#                         the server and pg_config, as the machine ships them
#   build-essential       gcc, g++, make, libc6-dev: the machine's C toolchain
#   perl                  the machine has it (pg_prove and pg_regress's
#                         helpers are Perl)
#   ca-certificates procps psmisc
#                         base tools of the machine's image
#
# and nothing else: never postgresql-server-dev-15, postgresql-15-pgtap,
# libtap-parser-sourcehandler-pgtap-perl or sqlsmith, which the README
# commands must install themselves (test/lib.sh, gh_install_deps).  apt is
# set up as on this host: the Debian entries of its sources (bookworm, its
# updates and security suites, on the host's mirror), its own apt.conf.d
# settings (those no package owns: a snapshot mirror's Valid-Until, a proxy),
# its resolv.conf and hosts; the package lists are emptied, as in a new image,
# so the commands must run apt-get update themselves.  /usr/sbin/policy-rc.d
# keeps packages from starting services (a PostgreSQL started in the root
# would take this host's port).  The commands run with a clean environment:
# HOME=/root, LANG=C.UTF-8 and Debian's root PATH.
#
# The image (debootstrap + those packages) is cached as a tarball in
# $GPUHASH_FRESH_CACHE (default /var/tmp/gpuhash-fresh), keyed by the mirror,
# the suite and the package list; every run unpacks it into a new temporary
# directory (under $TMPDIR, default /var/tmp), so each run starts from a
# pristine copy.  Inside the root: /proc, /sys (read-only), /dev (a bind
# mount of the host's), /dev/pts and a tmpfs on /dev/shm (PostgreSQL's
# POSIX shared memory).  On exit, failure or Ctrl-C it stops every process
# left in the root, unmounts, checks with findmnt that nothing is mounted
# below the root and only then removes it.
#
# --deb proves that the Debian package works on such a machine without the
# project's sources: packaging/build-deb.sh builds postgresql-15-gpuhash on
# this host (outside the root; with GPU code where nvcc is found, as on a
# build host), and the pristine root receives only the .deb and the tests
# (sql/, expected/, test/schedule, test/regress.conf, test/isolation/,
# test/deb_check.sh) in /root/gpuhash, where test/deb_check.sh installs the
# package with apt-get, checks that the library is the package's, starts a
# server with it preloaded, and runs the pg_regress suites and isolation
# specs against it with PGXS's pg_regress (postgresql-server-dev-15, which it
# installs for that alone).  It ends with deb_check.sh's "N passed, N failed",
# the package's build counted as one more.  GPUHASH_FRESH_DEB=FILE tests
# that package instead of building one.
#
# Logs go to $GPUHASH_FRESH_LOGDIR (default: a new /tmp/gpuhash-fresh-logs.*):
# image.log, demo.log, run.log and test-logs/ (test/run.sh's own logs);
# with --deb, deb-build.log (packaging/build-deb.sh), deb/ (the package and
# dpkg-buildpackage's log) and deb.log (test/deb_check.sh).
# GPUHASH_FRESH_MIRROR overrides the mirror read from the host's apt sources.
#
# On a 2-core machine: about 5 minutes with the image cached (the demo, then
# the whole test suite), a minute more to bootstrap the image; --no-cache
# --separate (two bootstraps) about 8; --deb about 11 (4 of them nvcc, for
# the Makefile's eight GPU architectures).
set -uo pipefail

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
use_cache=1 tree=head separate=0 deb=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-cache) use_cache=0 ;;
    --worktree) tree=worktree ;;
    --separate) separate=1 ;;
    --deb) deb=1 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done

src=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
PRE_PKGS=(postgresql postgresql-15 postgresql-contrib libpq-dev build-essential perl
          ca-certificates procps psmisc)
IMAGE_RECIPE=1        # bump when the way the image is made changes
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cache_dir=${GPUHASH_FRESH_CACHE:-/var/tmp/gpuhash-fresh}
t0=$SECONDS

say() { printf '== %s\n' "$*"; }
die() { echo "fresh.sh: $*" >&2; exit 1; }
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

[ "$(id -u)" -eq 0 ] || die "run it as root (debootstrap, chroot and mount need root)"
command -v apt-get >/dev/null || die "needs Debian's apt-get on this host"
command -v git >/dev/null || die "needs git (it copies the project with git archive / git ls-files)"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || die "$src is not a git checkout"

logdir=${GPUHASH_FRESH_LOGDIR:-$(mktemp -d /tmp/gpuhash-fresh-logs.XXXXXX)}
mkdir -p "$logdir" || die "cannot make $logdir"
logdir=$(cd "$logdir" && pwd)

# ---------------------------------------------------------------------------
# cleanup: everything a run mounted or made, also on failure and Ctrl-C

MOUNTS=()      # mount points, in mount order
ROOTS=()       # temporary directories to remove
CHILD=""       # the process group of the command running in a root

# root_pids DIR: processes whose root directory is DIR
root_pids() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    [ "$r" = "$1" ] && echo "${p#/proc/}"
  done
}

# stop_root_procs DIR: TERM, then KILL, every process left in the root
stop_root_procs() {
  local dir=$1 pids i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(root_pids "$dir")
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    if [ "$i" -le 5 ]; then kill -TERM $pids 2>/dev/null; else kill -KILL $pids 2>/dev/null; fi
    sleep 1
  done
  pids=$(root_pids "$dir")
  [ -z "$pids" ] || echo "fresh.sh: processes still in $dir: $pids" >&2
}

# mounts_below DIR: mount points at or below DIR, deepest first
mounts_below() {
  findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1' | sort -r
}

unmount_all() {
  local i m
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    m=${MOUNTS[$i]}
    mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }
  done
  MOUNTS=()
}

# remove_root DIR: remove a temporary root, but only when nothing is mounted
# below it any more (never rm -rf through a bind mount of the host's /dev)
remove_root() {
  local dir=$1 m
  [ -d "$dir" ] || return 0
  stop_root_procs "$dir/root"
  for m in $(mounts_below "$dir"); do umount "$m" 2>/dev/null || umount -l "$m"; done
  if [ -n "$(mounts_below "$dir")" ]; then
    echo "fresh.sh: still mounted below $dir, not removing it:" >&2
    mounts_below "$dir" >&2
    return 1
  fi
  rm -rf --one-file-system "$dir"
}

cleanup() {
  local rc=$? d
  trap - EXIT INT TERM HUP
  [ -n "$CHILD" ] && kill -TERM -- "-$CHILD" 2>/dev/null
  for d in "${ROOTS[@]}"; do stop_root_procs "$d/root"; done
  unmount_all
  for d in "${ROOTS[@]}"; do remove_root "$d"; done
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "fresh.sh: interrupted" >&2; exit 130' INT TERM HUP

# ---------------------------------------------------------------------------
# the host's apt set-up

# host_debian_entries: "URI SUITE COMPONENTS" for each enabled deb entry of
# the host's apt sources (one-line .list files and deb822 .sources) that is
# Debian's own: its components include main and it is signed, if named, by
# debian-archive-keyring
host_debian_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed 's/#.*//' "$f" | awk '
      $1 == "deb" {
        i = 2; opts = ""
        if ($2 ~ /^\[/) { while (i <= NF) { opts = opts " " $i; if ($i ~ /\]$/) break; i++ } i++ }
        if (opts ~ /signed-by=/ && opts !~ /debian-archive-keyring/) next
        comps = ""; for (j = i + 2; j <= NF; j++) comps = comps " " $j
        if (comps !~ / main( |$)/) next
        print $i, $(i + 1) comps
      }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush(   nu, ns, u, s, us, ss) {
        if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && (" " comps " ") ~ / main / &&
            (signed == "" || signed ~ /debian-archive-keyring/)) {
          nu = split(uris, us, " "); ns = split(suites, ss, " ")
          for (u = 1; u <= nu; u++) for (s = 1; s <= ns; s++) print us[u], ss[s], comps
        }
        types = uris = suites = comps = signed = enabled = ""; last = ""
      }
      /^#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]/ { if (last == "uris") uris = uris " " $0; else if (last == "suites") suites = suites " " $0
                 else if (last == "components") comps = comps " " $0; next }
      {
        key = tolower($0); sub(/:.*/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
        last = key
        if (key == "types") types = val; else if (key == "uris") uris = val
        else if (key == "suites") suites = val; else if (key == "components") comps = val
        else if (key == "signed-by") signed = val; else if (key == "enabled") enabled = val
      }
      END { flush() }' "$f"
  done
}

# the root's apt entries: the host's Debian ones with their release's name
# replaced by bookworm (bookworm, bookworm-updates, bookworm-security)
entries=$(host_debian_entries | awk -v s="$suite" '{
  suf = $2; if (suf ~ /-/) { sub(/^[^-]*/, "", suf) } else suf = ""
  if (suf != "" && suf != "-updates" && suf != "-security") next
  $2 = s suf; print }' | awk '!seen[$0]++')
mirror=${GPUHASH_FRESH_MIRROR:-$(echo "$entries" | awk -v s="$suite" '$2 == s { print $1; exit }')}
[ -n "$mirror" ] || die "no Debian source found in /etc/apt/sources.list{,.d}; set GPUHASH_FRESH_MIRROR"
[ -n "$entries" ] || entries="$mirror $suite main"

# host_apt_conf: the host's apt.conf.d files that no package owns (the
# image's own settings)
host_apt_conf() {
  local f
  for f in /etc/apt/apt.conf.d/*; do
    [ -f "$f" ] || continue
    dpkg -S "$f" >/dev/null 2>&1 || echo "$f"
  done
}

# ---------------------------------------------------------------------------
# roots

# setup_net ROOT: apt sources, apt settings, name resolution, no services
setup_net() {
  local r=$1 f
  echo "$entries" | awk '{ printf "deb %s %s", $1, $2; for (i = 3; i <= NF; i++) printf " %s", $i; print "" }' \
    >"$r/etc/apt/sources.list"
  rm -f "$r"/etc/apt/sources.list.d/*.list "$r"/etc/apt/sources.list.d/*.sources
  for f in $(host_apt_conf); do cp "$f" "$r/etc/apt/apt.conf.d/"; done
  rm -f "$r/etc/resolv.conf"; cp -L /etc/resolv.conf "$r/etc/resolv.conf"
  cp /etc/hosts "$r/etc/hosts"
  printf '#!/bin/sh\n# no service starts in this root: it shares the host'"'"'s network\nexit 101\n' \
    >"$r/usr/sbin/policy-rc.d"
  chmod 755 "$r/usr/sbin/policy-rc.d"
}

# mount_root ROOT
mount_root() {
  local r=$1
  mount -t proc proc "$r/proc" && MOUNTS+=("$r/proc") || return 1
  if mount -t sysfs -o ro sysfs "$r/sys" 2>/dev/null || mount --bind -o ro /sys "$r/sys"; then
    MOUNTS+=("$r/sys")
  fi
  mount --bind /dev "$r/dev" && MOUNTS+=("$r/dev") || return 1
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$r/dev/pts" 2>/dev/null \
    || mount --bind /dev/pts "$r/dev/pts" || return 1
  MOUNTS+=("$r/dev/pts")
  mount -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm" && MOUNTS+=("$r/dev/shm") || return 1
}

# in_root ROOT CMD...: run CMD as root in ROOT with a clean environment
in_root() {
  local r=$1; shift
  chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash \
    PATH="$ROOT_PATH" LANG=C.UTF-8 "$@"
}

# build_image [TARBALL]: a root in a new temporary directory, BUILT_DIR:
# debootstrap minbase, the machine's packages, empty package lists; saved as
# TARBALL when given (the functions here set globals rather than echo, since
# a command substitution's subshell would lose ROOTS and MOUNTS)
BUILT_DIR=""
build_image() {
  local out=$1 d r p
  d=$(mktemp -d "${TMPDIR:-/var/tmp}/gpuhash-fresh-image.XXXXXX") || return 1
  d=$(cd "$d" && pwd -P); ROOTS+=("$d"); r=$d/root; BUILT_DIR=$d
  say "debootstrap --variant=minbase $suite from $mirror (log: $logdir/image.log)"
  debootstrap --variant=minbase "$suite" "$r" "$mirror" >>"$logdir/image.log" 2>&1 \
    || { tail -20 "$logdir/image.log"; return 1; }
  setup_net "$r"
  mount_root "$r" || return 1
  say "installing what a fresh machine ships: ${PRE_PKGS[*]}"
  in_root "$r" /bin/sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" \
      && apt-get clean && rm -rf /var/lib/apt/lists/*' sh "${PRE_PKGS[@]}" \
    </dev/null >>"$logdir/image.log" 2>&1 || { tail -20 "$logdir/image.log"; return 1; }
  for p in postgresql-server-dev-15 postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl sqlsmith; do
    if in_root "$r" dpkg -s "$p" >/dev/null 2>&1; then echo "the image must not have $p" >&2; return 1; fi
  done
  stop_root_procs "$r"
  unmount_all
  rm -f "$r/etc/resolv.conf"
  if [ -n "$out" ]; then
    mkdir -p "$(dirname "$out")"
    tar -C "$r" --numeric-owner -cpf - . | zstd -q -T0 -3 >"$out.tmp.$$" && mv "$out.tmp.$$" "$out" \
      || { rm -f "$out.tmp.$$"; return 1; }
  fi
}

# new_root: a pristine root in a new temporary directory, ROOT_DIR
image="" ROOT_DIR=""
new_root() {
  local d
  if [ "$use_cache" = 0 ] || [ -z "$image" ]; then
    # --no-cache: every root bootstrapped afresh
    build_image "" || return 1
    ROOT_DIR=$BUILT_DIR
  else
    d=$(mktemp -d "${TMPDIR:-/var/tmp}/gpuhash-fresh-root.XXXXXX") || return 1
    d=$(cd "$d" && pwd -P); ROOTS+=("$d"); ROOT_DIR=$d
    mkdir "$d/root"
    zstd -q -dc "$image" | tar -C "$d/root" --numeric-owner -xpf - || return 1
  fi
}

# copy_project ROOT [PATH...]: the project's tree, or only these of its
# files and folders, into ROOT/root/gpuhash
copy_project() {
  local r=$1; shift
  mkdir -p "$r/root/gpuhash"
  if [ "$tree" = head ]; then
    git -C "$src" archive --format=tar HEAD -- "$@" | tar -C "$r/root/gpuhash" -xf -
  else
    (cd "$src" && git ls-files -z --cached --others --exclude-standard -- "$@" \
      | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
      | tar --null -T - -cf -) | tar -C "$r/root/gpuhash" -xf -
  fi
}

# run_cmd ROOT NAME CMD: run CMD in /root/gpuhash as root, log to NAME.log;
# the command runs in its own process group, so that Ctrl-C here stops it
run_cmd() {
  local r=$1 name=$2 cmd=$3 start rc
  start=$SECONDS
  say "$cmd (log: $logdir/$name.log)"
  set -m
  in_root "$r" /bin/bash -c "cd /root/gpuhash && $cmd" </dev/null >"$logdir/$name.log" 2>&1 &
  CHILD=$!
  set +m
  wait "$CHILD"; rc=$?
  CHILD=""
  stop_root_procs "$r"
  eval "${name}_rc=$rc ${name}_time=$((SECONDS - start))"
  tail -n 15 "$logdir/$name.log" | sed 's/^/   | /'
  say "$cmd: exit $rc after $(mmss $((SECONDS - start)))"
}

# ---------------------------------------------------------------------------

command -v findmnt >/dev/null && command -v mountpoint >/dev/null || die "needs findmnt and mountpoint (util-linux)"
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v zstd >/dev/null || need+=(zstd)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} on this host"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } \
    >>"$logdir/image.log" 2>&1 || die "apt-get could not install ${need[*]} (log: $logdir/image.log)"
fi

say "project: $src ($( [ "$tree" = head ] && echo "committed HEAD $(git -C "$src" rev-parse --short HEAD)" || echo "working tree"))"
say "logs: $logdir"
key=$(printf '%s\n' "$IMAGE_RECIPE" "$suite" "$mirror" "$entries" "${PRE_PKGS[@]}" | sha256sum | cut -c1-12)
if [ "$use_cache" = 1 ]; then
  image=$cache_dir/$suite-minbase-$key.tar.zst
  if [ -s "$image" ]; then
    say "image: $image (cached; remove it or pass --no-cache to bootstrap afresh)"
  else
    build_image "$image" || die "could not make the image (log: $logdir/image.log)"
    remove_root "$BUILT_DIR"
    say "image: $image ($(du -h "$image" | cut -f1), made in $(mmss $((SECONDS - t0))))"
  fi
fi

# --deb: the package built here, installed and tested in a pristine root
if [ "$deb" = 1 ]; then
  debdir=$logdir/deb build_args=(--out "$logdir/deb")
  [ "$tree" = head ] && build_args+=(--head)
  start=$SECONDS
  if [ -n "${GPUHASH_FRESH_DEB:-}" ]; then
    say "the package: $GPUHASH_FRESH_DEB (GPUHASH_FRESH_DEB; not built here)"
    mkdir -p "$debdir" && cp "$GPUHASH_FRESH_DEB" "$debdir/"
    build_rc=$?
  else
    say "building the package on this host: packaging/build-deb.sh ${build_args[*]} (log: $logdir/deb-build.log)"
    "$src/packaging/build-deb.sh" "${build_args[@]}" >"$logdir/deb-build.log" 2>&1
    build_rc=$?
    sed 's/^/   | /' "$logdir/deb-build.log" | tail -n 15
  fi
  build_time=$((SECONDS - start))
  shopt -s nullglob
  debs=("$debdir"/postgresql-15-gpuhash_*.deb)
  shopt -u nullglob
  if [ "$build_rc" -ne 0 ] || [ ${#debs[@]} -ne 1 ]; then
    echo
    echo "packaging/build-deb.sh: FAILED (exit $build_rc, ${#debs[@]} packages) in $(mmss "$build_time")"
    echo "logs: $logdir; wall time $(mmss $((SECONDS - t0)))"
    echo "0 passed, 1 failed"
    exit 1
  fi
  new_root || die "could not make a root (log: $logdir/image.log)"
  root_dir=$ROOT_DIR r=$root_dir/root
  say "fresh root: $r"
  setup_net "$r"
  copy_project "$r" sql expected test/schedule test/regress.conf test/isolation test/deb_check.sh
  mkdir -p "$r/root/deb" && cp "${debs[0]}" "$r/root/deb/"
  mount_root "$r" || die "could not mount /proc, /dev in $r"
  deb_rc=1 deb_time=0
  run_cmd "$r" deb "bash test/deb_check.sh /root/deb/$(basename "${debs[0]}")"
  counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logdir/deb.log" | tail -1)
  say "removing $root_dir"
  stop_root_procs "$r"; unmount_all; remove_root "$root_dir"
  passed=0 failed=0
  [ -z "${GPUHASH_FRESH_DEB:-}" ] && passed=1
  if [ -n "$counts" ]; then
    passed=$((passed + $(echo "$counts" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$counts" | cut -d' ' -f3)))
  fi
  # a check script that failed without counting it: one more failure
  [ "$deb_rc" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
  echo
  echo "the package: $( [ -z "${GPUHASH_FRESH_DEB:-}" ] && echo "built in $(mmss "$build_time")" || echo given): $(basename "${debs[0]}"), Gpuhash-Build: $(dpkg-deb -f "${debs[0]}" Gpuhash-Build)"
  echo "test/deb_check.sh: $( [ "$deb_rc" -eq 0 ] && echo ok || echo "FAILED (exit $deb_rc)") in $(mmss "$deb_time"): ${counts:-no count line}"
  echo "logs: $logdir; wall time $(mmss $((SECONDS - t0)))"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

demo_rc=1 run_rc=1 demo_time=0 run_time=0
new_root || die "could not make a root (log: $logdir/image.log)"
root_dir=$ROOT_DIR r=$root_dir/root
say "fresh root: $r"
setup_net "$r"; copy_project "$r"; mount_root "$r" || die "could not mount /proc, /dev in $r"
run_cmd "$r" demo ./demo.sh
cp "$r/tmp/gpuhash-demo-build.log" "$logdir/demo-build.log" 2>/dev/null

if [ "$separate" = 1 ]; then
  stop_root_procs "$r"; unmount_all; remove_root "$root_dir"
  new_root || die "could not make a second root"
  root_dir=$ROOT_DIR r=$root_dir/root
  say "second fresh root: $r"
  setup_net "$r"; copy_project "$r"; mount_root "$r" || die "could not mount /proc, /dev in $r"
fi
run_cmd "$r" run test/run.sh
tlogs=$(sed -n 's/^logs: //p' "$logdir/run.log" | tail -1)
[ -n "$tlogs" ] && [ -d "$r$tlogs" ] && cp -r "$r$tlogs" "$logdir/test-logs"

counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logdir/run.log" | tail -1)
say "removing $root_dir"
stop_root_procs "$r"; unmount_all; remove_root "$root_dir"
passed=0 failed=0
echo
if [ "$demo_rc" -eq 0 ]; then passed=$((passed + 1)); r1=ok; else failed=$((failed + 1)); r1="FAILED (exit $demo_rc)"; fi
if [ "$run_rc" -eq 0 ]; then passed=$((passed + 1)); r2=ok; else failed=$((failed + 1)); r2="FAILED (exit $run_rc)"; fi
echo "./demo.sh: $r1 in $(mmss "$demo_time")"
echo "test/run.sh: $r2 in $(mmss "$run_time"): ${counts:-no count line}"
echo "logs: $logdir; wall time $(mmss $((SECONDS - t0)))"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
