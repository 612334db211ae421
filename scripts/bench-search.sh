#!/usr/bin/env bash
# bench-search.sh: glob and grep side by side with ripgrep, on a generated
# tree shaped like a large repository (about 50,000 files and 500 MB, kept
# outside the repository) and on this repository, in the same run with a
# warm page cache. It first checks that both find the same files and the
# same matches on the generated tree. Tests never need ripgrep; this
# script installs Debian's package when it is missing.
#
#   scripts/bench-search.sh            # tree in /tmp/acp-search-tree
#   TREE=/path BENCHTIME=5x scripts/bench-search.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${TREE:-/tmp/acp-search-tree}
BENCHTIME=${BENCHTIME:-5x}
PKG=./agent/tool/workspace/search

if ! command -v rg >/dev/null; then
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update
	$sudo apt-get install -y ripgrep
fi
rg --version | head -1

if [ ! -d "$TREE" ]; then
	go run ./internal/benchtree/gentree -out "$TREE"
fi
echo "tree: $TREE: $(find "$TREE" -type f -not -path '*/.git/*' | wc -l) files, $(du -sm --exclude=.git "$TREE" | cut -f1) MB"

echo "== same files and matches as rg on $TREE"
ACP_SEARCH_TREE=$TREE go test -count=1 -run '^TestSameAsRipgrep$' -v "$PKG" | grep -E 'listed|found|FAIL|ok'

# table prints "name  rg  ours  ours/rg" from the benchmark output.
table() {
	awk '/^BenchmarkRipgrep\// {
		split($1, a, "/"); op = a[2]; who = a[3]; sub(/-[0-9]+$/, "", who)
		ns[op, who] = $3; if (!(op in seen)) { seen[op] = 1; order[++n] = op }
	}
	END {
		printf "%-16s %12s %12s %8s\n", "operation", "rg ms", "ours ms", "ours/rg"
		for (i = 1; i <= n; i++) {
			op = order[i]; ours = (op == "files") ? "glob" : "grep"
			printf "%-16s %12.1f %12.1f %8.2f\n", op, ns[op, "rg"] / 1e6, ns[op, ours] / 1e6, ns[op, ours] / ns[op, "rg"]
		}
	}'
}

for dir in "$TREE" "$PWD"; do
	echo "== $dir (benchtime $BENCHTIME, GOMAXPROCS $(nproc))"
	out=$(mktemp)
	ACP_SEARCH_TREE=$dir go test -run '^$' -bench '^BenchmarkRipgrep$' -benchtime "$BENCHTIME" "$PKG" >"$out"
	grep '^Benchmark' "$out"
	table <"$out"
	rm -f "$out"
done
