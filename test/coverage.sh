#!/bin/bash
# test/coverage.sh - line and function coverage of src/ and the CPU twin
# (cuda/*_cpu.c, cuda/nocuda.c) under test/run.sh; what `make coverage` runs.
#
#   test/coverage.sh [--quick]       test/run.sh [--quick] on a gcov build, then
#                                    the report in coverage/ (COVERAGE_DIR)
#   test/coverage.sh --report-only   the report again from the counts the last
#                                    run left in coverage/gcda
#   test/coverage.sh --more CMD...   CMD (say, make installcheck of a new suite)
#                                    on the build and installation the last run
#                                    left, its counts added to that run's (the
#                                    same build: a rebuild's counts and the old
#                                    ones do not mix)
#
# How the counts get out: test/run.sh rebuilds the tree (make clean, make,
# make install); GPUHASH_COVERAGE=1 in its environment makes the Makefile add
# --coverage -O0, so every object has a .gcno beside it and the installed
# library counts.  The servers run as another user (postgres) who may not write
# into the checkout, so GCOV_PREFIX sends each process's counts, at exit, to a
# directory it owns (the object's absolute path under it); gh_as_pg passes
# GCOV_PREFIX to every server and single-user backend the suites start.
# Backends, parallel workers and the GPU service leave through proc_exit and
# exit(), which runs gcov's dump; a process ended by SIGKILL, SIGQUIT or a
# crash leaves nothing, which costs counts, not correctness.  libgcov merges
# concurrent writers under a file lock.
#
# The report: coverage.info (lcov), html/ (genhtml), and summary.txt: each
# file's lines and functions, the totals of src/ and of the CPU twin, and
# every function no test called.  GPUHASH_COVERAGE_MIN=N: fail when src/'s
# line coverage is below N percent.
#
# test/run.sh's environment passes through (GPUHASH_TEST_PARTS,
# GPUHASH_TEST_REGRESS, GPUHASH_TEST_SKIP_ROBUST, GPUHASH_PORTS, ...), for a
# partial run while writing tests; a partial run's numbers are partial.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$GPUHASH_ROOT" || exit 1

report_only=0 more=() args=()
while [ $# -gt 0 ]; do
  case $1 in
    --report-only) report_only=1 ;;
    --more) shift; more=("$@"); [ ${#more[@]} -gt 0 ] || { echo "--more needs a command" >&2; exit 2; }; break ;;
    --quick) args+=("$1") ;;
    *) echo "usage: test/coverage.sh [--quick | --report-only | --more CMD...]" >&2; exit 2 ;;
  esac
  shift
done

out=${COVERAGE_DIR:-$GPUHASH_ROOT/coverage}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export GPUHASH_COVERAGE=1

gh_install_deps || exit 1
for t in gcov lcov genhtml; do
  command -v $t >/dev/null 2>&1 || { echo "make coverage needs $t (Debian: apt-get install lcov)" >&2; exit 1; }
done

rc=0
if [ ${#more[@]} -gt 0 ]; then
  # the counts so far, where the servers will add theirs (gcov merges)
  [ -d "$out/gcda/src" ] || { echo "no counts in $out/gcda to add to: run test/coverage.sh first" >&2; exit 1; }
  gcda=$(gh_tmpdir)
  chmod 1777 "$gcda"
  mkdir -p "$gcda$GPUHASH_ROOT"
  cp -r "$out/gcda/." "$gcda$GPUHASH_ROOT/"
  chmod -R a+rwX "$gcda"
  GCOV_PREFIX=$gcda GCOV_PREFIX_STRIP=0 "${more[@]}"
  rc=$?
  (cd "$gcda$GPUHASH_ROOT" && find src cuda -name '*.gcda' -print0 | xargs -0r cp --parents -t "$out/gcda")
  rm -rf "$gcda"
elif [ $report_only = 0 ]; then
  # a directory the servers' user owns, outside a checkout it may not read
  gcda=$(gh_tmpdir)
  chmod 1777 "$gcda"
  export GCOV_PREFIX=$gcda GCOV_PREFIX_STRIP=0
  bash test/run.sh "${args[@]}" | tee "$out/run.log"
  rc=${PIPESTATUS[0]}
  unset GCOV_PREFIX GCOV_PREFIX_STRIP
  # keep the counts beside the report (the objects' .gcno stay in the tree)
  rm -rf "$out/gcda"
  mkdir -p "$out/gcda"
  if [ -d "$gcda$GPUHASH_ROOT" ]; then
    (cd "$gcda$GPUHASH_ROOT" && find src cuda -name '*.gcda' -print0 | xargs -0r cp --parents -t "$out/gcda")
  fi
  rm -rf "$gcda"
fi

ls "$GPUHASH_ROOT"/src/*.gcno >/dev/null 2>&1 ||
  { echo "no .gcno in src/: the tree was not built with GPUHASH_COVERAGE=1" >&2; exit 1; }
ngcda=$(find "$out/gcda" -name '*.gcda' 2>/dev/null | wc -l)
echo
echo "== coverage report ($ngcda count files; $out)"
[ "$ngcda" -gt 0 ] || { echo "no counts were written: did any server load the library?" >&2; exit 1; }

# gcov wants the counts beside the notes: a scratch copy of both
work=$(mktemp -d /tmp/gpuhash-cov.XXXXXX)
trap 'rm -rf "$work"' EXIT
for d in src cuda; do
  mkdir -p "$work/$d"
  cp "$GPUHASH_ROOT/$d"/*.gcno "$work/$d/" 2>/dev/null
  cp "$out/gcda/$d"/*.gcda "$work/$d/" 2>/dev/null
done
lq=(--quiet --rc lcov_branch_coverage=0)
# the .gcno name the sources relative to the build directory: -b resolves them
lcov "${lq[@]}" --capture --initial -b "$GPUHASH_ROOT" -d "$work" -o "$work/base.info" &&
  lcov "${lq[@]}" --capture -b "$GPUHASH_ROOT" -d "$work" -o "$work/test.info" &&
  lcov "${lq[@]}" -a "$work/base.info" -a "$work/test.info" -o "$work/all.info" &&
  lcov "${lq[@]}" --extract "$work/all.info" "$GPUHASH_ROOT/src/*" "$GPUHASH_ROOT/cuda/*" \
    -o "$out/coverage.info" || { echo "lcov failed" >&2; exit 1; }
rm -rf "$out/html"
genhtml --quiet --title "gpuhash $(git rev-parse --short HEAD 2>/dev/null)" --prefix "$GPUHASH_ROOT" \
  -o "$out/html" "$out/coverage.info" || { echo "genhtml failed" >&2; exit 1; }

# summary.txt from the tracefile: per file LH/LF, FNH/FNF, and the functions
# whose FNDA count is 0
awk -v root="$GPUHASH_ROOT/" -v commit="$(git rev-parse --short HEAD 2>/dev/null)" '
  /^SF:/ { f = substr($0, 4); sub("^" root, "", f); files[++nf] = f; next }
  /^FN:/ { split(substr($0, 4), a, ","); fnline[f, a[2]] = a[1]; next }
  /^FNDA:/ { split(substr($0, 6), a, ","); fncount[f, a[2]] += a[1]; fnseen[f, a[2]] = 1; next }
  /^LH:/ { lh[f] = substr($0, 4); next }
  /^LF:/ { lf[f] = substr($0, 4); next }
  /^FNH:/ { fh[f] = substr($0, 5); next }
  /^FNF:/ { ff[f] = substr($0, 5); next }
  function pct(h, t) { return t ? sprintf("%5.1f%%", 100 * h / t) : "    -" }
  END {
    printf "gpuhash coverage at %s (gcov under test/run.sh)\n\n", commit
    printf "%-28s %13s %7s %11s %7s\n", "file", "lines", "", "functions", ""
    for (i = 1; i <= nf; i++) {
      f = files[i]
      printf "%-28s %6d/%-6d %7s %5d/%-5d %7s\n", f, lh[f], lf[f], pct(lh[f], lf[f]), fh[f], ff[f], pct(fh[f], ff[f])
      g = (f ~ /^src\//) ? "src/" : "cuda/ (CPU twin)"
      tlh[g] += lh[f]; tlf[g] += lf[f]; tfh[g] += fh[f]; tff[g] += ff[f]
    }
    print ""
    for (g in tlf)
      printf "TOTAL %-22s %6d/%-6d %7s %5d/%-5d %7s\n", g, tlh[g], tlf[g], pct(tlh[g], tlf[g]), tfh[g], tff[g], pct(tfh[g], tff[g])
    print "\nfunctions never called:"
    for (k in fnseen) if (fncount[k] == 0) { split(k, a, SUBSEP); print a[1] ":" fnline[a[1], a[2]] " " a[2] }
  }' "$out/coverage.info" >"$work/summary.txt"
# the never-called list sorted by file and line
{ sed -n '1,/^functions never called:/p' "$work/summary.txt"
  sed -n '/^functions never called:/,$p' "$work/summary.txt" | tail -n +2 | sort -t: -k1,1 -k2,2n; } >"$out/summary.txt"
cat "$out/summary.txt"
echo "report: $out/html/index.html, $out/summary.txt"

srcpct=$(awk '/^TOTAL src\//{gsub("%","",$4); print $4}' "$out/summary.txt")
if [ -n "${GPUHASH_COVERAGE_MIN:-}" ] && awk -v p="$srcpct" -v m="$GPUHASH_COVERAGE_MIN" 'BEGIN{exit !(p < m)}'; then
  echo "src/ line coverage $srcpct% is below GPUHASH_COVERAGE_MIN=$GPUHASH_COVERAGE_MIN%"
  [ $rc -eq 0 ] && rc=1
fi
if [ ${#more[@]} -gt 0 ]; then echo "${more[*]} exited $rc"
elif [ $report_only = 0 ]; then echo "test/run.sh exited $rc"; fi
exit $rc
