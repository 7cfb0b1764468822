#!/usr/bin/env bash
# tinyauth's own test suite over modernc alone and through cleolease over
# modernc (issue 30: the same passes, no new failure, with CGO_ENABLED=0).
#
#   internal/appsuite/tinyauth.sh [TINYAUTH_SRC]
#
# TINYAUTH_SRC is a source tree of github.com/steveiliop56/tinyauth (it
# reads database/sql + golang-migrate over modernc.org/sqlite, and opens its
# database in internal/bootstrap/db_bootstrap.go with sql.Open("sqlite",
# PATH)). Without it, the HEAD of the snapshot in $TINYAUTH_MIRROR (default
# /work/.mirror/steveiliop56+tinyauth/repo, a git directory) is extracted.
# tinyauth is not on the Go module proxy; its dependencies are (GOFLAGS
# gets -mod=mod).
#
# In a temporary directory it makes three copies of the tree and runs
# CGO_ENABLED=0 go test -count=1 -json ./... in each:
#
#   asis     tinyauth as it is (its own modernc.org/sqlite version);
#   base     modernc.org/sqlite and modernc.org/libc raised to the versions
#            the cleolease modernc module requires, which MVS gives the
#            third copy: the baseline compared with it;
#   lease    the only source change: the import of modernc.org/sqlite
#            becomes github.com/cleocode/cleolease/modernc and the driver
#            name "sqlite" becomes "cleolease-modernc"; go.mod requires
#            github.com/cleocode/cleolease/modernc v0.0.0 and replaces it
#            and github.com/cleocode/cleolease with this checkout.
#
# tinyauth embeds its web UI's build (internal/assets/dist, made by bun in
# its CI); when the tree has none, each copy gets the same one-file
# placeholder, which its Go tests do not read.
#
# Then internal/appsuite/compare prints the tests that pass in one run and
# not in the other, and the new failures: asis against base (information:
# what the newer modernc alone changes), base against lease (the verdict).
# Exits 1 when the lease copy loses a pass or gains a failure, 2 on a
# setup error.
#
# Environment:
#   TINYAUTH_MIRROR   the git directory extracted when no TINYAUTH_SRC
#   APPSUITE_P        go test -p (default 1: two shared cores)
#   APPSUITE_KEEP     1 keeps the temporary directory and prints its path
#   APPSUITE_CGO      CGO_ENABLED of the three runs (default 0; 1 is a
#                     diagnostic, not the criterion)
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
mirror=${TINYAUTH_MIRROR:-/work/.mirror/steveiliop56+tinyauth/repo}
par=${APPSUITE_P:-1}
cgo=${APPSUITE_CGO:-0}
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"

die() { echo "tinyauth.sh: $*" >&2; exit 2; }

[ -f "$root/modernc/go.mod" ] || die "$root/modernc/go.mod not found (is the script in internal/appsuite of a cleolease checkout?)"

work=$(mktemp -d "${TMPDIR:-/tmp}/appsuite-tinyauth.XXXXXX")
if [ "${APPSUITE_KEEP:-0}" = 1 ]; then
	trap 'echo "kept $work"' EXIT
else
	trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
fi

# The source tree and its commit.
src=${1:-}
commit=unknown
if [ -z "$src" ]; then
	[ -d "$mirror" ] || die "no TINYAUTH_SRC given and no mirror at $mirror"
	commit=$(git -C "$mirror" rev-parse HEAD)
	src=$work/src
	mkdir -p "$src"
	git -C "$mirror" archive HEAD | tar -x -C "$src"
else
	[ -f "$src/go.mod" ] || die "$src/go.mod not found"
	src=$(cd "$src" && pwd)
	commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
fi
grep -q '^module github.com/steveiliop56/tinyauth$' "$src/go.mod" || die "$src is not github.com/steveiliop56/tinyauth"

# The versions the cleolease modernc module requires.
req() { (cd "$root/modernc" && go list -m -f '{{.Version}}' "$1"); }
sqlite_v=$(req modernc.org/sqlite)
libc_v=$(req modernc.org/libc)

echo "tinyauth $commit ($src)"
echo "cleolease $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" status --porcelain 2>/dev/null | grep -q . && echo ' (uncommitted changes)') at $root"
echo "CGO_ENABLED=$cgo, go test -p $par; cleolease modernc requires modernc.org/sqlite $sqlite_v, modernc.org/libc $libc_v"

copy() {
	mkdir -p "$work/$1"
	cp -R "$src/." "$work/$1"
	rm -rf "$work/$1/.git"
	if [ ! -e "$work/$1/internal/assets/dist" ]; then
		mkdir -p "$work/$1/internal/assets/dist"
		echo '<!doctype html><title>placeholder for the web UI build</title>' >"$work/$1/internal/assets/dist/index.html"
	fi
}

copy asis
copy base
(cd "$work/base" && go get "modernc.org/sqlite@$sqlite_v" "modernc.org/libc@$libc_v" >/dev/null 2>"$work/base.get.err") ||
	{ cat "$work/base.get.err" >&2; die "go get modernc.org/sqlite@$sqlite_v failed"; }

# The lease copy: the files that open the database through "sqlite" and
# import modernc.org/sqlite for it (tinyauth has one).
copy lease
mapfile -t opens < <(cd "$work/lease" && grep -rlE --include='*.go' 'sql\.Open\("sqlite",' . | sort)
[ "${#opens[@]}" -gt 0 ] || die 'no sql.Open("sqlite", ...) in the tree'
for f in "${opens[@]}"; do
	p=$work/lease/$f
	grep -q '_ "modernc.org/sqlite"' "$p" || die "$f opens \"sqlite\" but does not import modernc.org/sqlite blank"
	sed -i -e 's#_ "modernc.org/sqlite"#_ "github.com/cleocode/cleolease/modernc"#' \
		-e 's#sql\.Open("sqlite", #sql.Open("cleolease-modernc", #g' "$p"
	echo "changed $f:"
	diff -u "$work/asis/$f" "$p" | sed -n 's/^\([-+]\)\([^-+]\)/  \1\2/p' || true
done
left=$(cd "$work/lease" && grep -rlE --include='*.go' '"modernc.org/sqlite"|sql\.Open\("sqlite"' . || true)
[ -z "$left" ] || echo "note: still naming modernc.org/sqlite or \"sqlite\" (left as they are): $left"
(cd "$work/lease" &&
	go mod edit -require github.com/cleocode/cleolease/modernc@v0.0.0 \
		-replace "github.com/cleocode/cleolease/modernc=$root/modernc" \
		-replace "github.com/cleocode/cleolease=$root")

# The modules (path version) whose packages the copy's tests build with.
built() {
	(cd "$work/$1" && CGO_ENABLED=$cgo go list -deps -test -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' ./... | sort -u)
}

# A few of them, after go test has settled go.mod (-mod=mod).
versions() {
	built "$1" | awk '$1 ~ /^(modernc\.org\/(sqlite|libc)|github\.com\/golang-migrate\/migrate\/v4|github\.com\/mattn\/go-sqlite3)$/' | paste -sd, - | sed 's/,/, /g'
}

run() {
	local name=$1 rc=0
	echo
	echo "== $name"
	if ! (cd "$work/$name" && CGO_ENABLED=$cgo go build ./... >"$work/$name.build" 2>&1); then
		echo "does not build with CGO_ENABLED=$cgo:"
		head -n 20 "$work/$name.build" | sed 's/^/  /'
	fi
	(cd "$work/$name" && CGO_ENABLED=$cgo go test -p "$par" -count=1 -json ./... >"$work/$name.json" 2>"$work/$name.stderr") || rc=$?
	echo "go test exit status $rc; built with $(versions "$name")"
}

run asis
run base
run lease

# The modules the lease copy's tests build with at another version than
# the baseline's, or that only it builds with (cleolease's requirements
# raise them through MVS).
echo
echo "== modules built at another version in lease than in base (or only in lease):"
built base | awk 'NF == 2' >"$work/base.mods"
built lease | awk 'NF == 2' >"$work/lease.mods"
join -a2 -e '(none)' -o 0,1.2,2.2 "$work/base.mods" "$work/lease.mods" | awk '$2 != $3 { print "  " $1 ": " $2 " -> " $3 }'

(cd "$root" && go build -o "$work/compare" ./internal/appsuite/compare)

echo
echo "== asis -> base (modernc alone, raised to $sqlite_v; information)"
"$work/compare" "$work/asis.json" "$work/base.json" || true

echo
echo "== base -> lease (the criterion)"
verdict=0
"$work/compare" "$work/base.json" "$work/lease.json" || verdict=$?
if [ "${APPSUITE_KEEP:-0}" = 1 ]; then
	echo "the runs' go test -json output: $work/{asis,base,lease}.json"
fi
exit "$verdict"
