#!/usr/bin/env bash
# Build SQLite's own CLI with the sqlite_dbpage table that its .recover
# needs (Debian's and most distributions' builds lack it), once, into a
# cache kept between runs, for the side-by-side comparison with preflight
# recover (salvage/compare_test.go):
#
#   scripts/sqlite-recover-cli.sh     # prints the path of the sqlite3 binary
#
# The sources are SQLite 3.52.0's autoconf amalgamation (shell.c,
# sqlite3.c) as the npm package sqlite3@6.0.1 carries them; the binary goes
# to $PREFLIGHT_TOOLS_DIR/sqlite-3.52.0/sqlite3 (default
# ~/.cache/preflight-tools). A build goes to DIR.partial first and is
# renamed when done; a lock (flock on DIR.lock) makes a second caller wait.
# About a minute on 2 cores when the machine is idle.
set -euo pipefail

PKG=sqlite3@6.0.1
tools=${PREFLIGHT_TOOLS_DIR:-$HOME/.cache/preflight-tools}
dir=$tools/sqlite-3.52.0

say() { echo "sqlite-recover-cli: $*" >&2; }

if [ ! -x "$dir/sqlite3" ]; then
	mkdir -p "$tools"
	exec 9>"$dir.lock"
	flock 9
	if [ ! -x "$dir/sqlite3" ]; then
		say "building SQLite's CLI with SQLITE_ENABLE_DBPAGE_VTAB from npm $PKG into $dir"
		start=$(date +%s)
		rm -rf "$dir.partial"
		mkdir -p "$dir.partial/src"
		(
			cd "$dir.partial/src"
			npm pack --silent "$PKG" >/dev/null
			tar xzf sqlite3-*.tgz
			tarball=$(find package -name 'sqlite-autoconf-*.tar.gz' | head -1)
			[ -n "$tarball" ] || { say "no sqlite-autoconf tarball in $PKG"; exit 1; }
			tar xzf "$tarball"
			cd sqlite-autoconf-*/
			gcc -O2 -DSQLITE_ENABLE_DBPAGE_VTAB -DSQLITE_ENABLE_FTS5 -DSQLITE_THREADSAFE=0 \
				shell.c sqlite3.c -lpthread -ldl -lm -o "$dir.partial/sqlite3"
		)
		rm -rf "$dir.partial/src"
		rm -rf "$dir"
		mv "$dir.partial" "$dir"
		say "built in $(($(date +%s) - start)) s"
	fi
fi
echo "$dir/sqlite3"
