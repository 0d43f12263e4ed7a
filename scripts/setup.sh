#!/usr/bin/env bash
# Sets up a fresh machine for this repository: pnpm, the database servers the tests use (from
# Debian's packages, when missing), the workspace packages, and a build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# better-sqlite3 compiles from source here; node-gyp needs the local Node headers.
export npm_config_nodedir="${npm_config_nodedir:-/usr}"

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "12.4.2" ]; then
  echo "setup: installing pnpm 12.4.2"
  npm install -g pnpm@12.4.2 >/dev/null
fi

apt_updated=""
need_apt() {
  if [ "$(id -u)" != "0" ]; then
    echo "setup: $1 is missing and this is not root; install it (Debian: apt-get install -y $1)" >&2
    return 1
  fi
  if [ -z "$apt_updated" ]; then apt-get update -qq; apt_updated=1; fi
  echo "setup: installing $1 from Debian's packages"
  # apt's chatter (debconf notes and the like) is shown only when the install fails.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/tmp/resumable-apt.log 2>&1; then
    cat /tmp/resumable-apt.log >&2
    return 1
  fi
  rm -f /tmp/resumable-apt.log
}

if [ -z "${RESUMABLE_POSTGRES_URL:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need_apt postgresql
fi

# Redis (standalone and cluster): redis-server, and redis-cli to create the cluster.
if { [ -z "${RESUMABLE_REDIS_URL:-}" ] || [ -z "${RESUMABLE_REDIS_CLUSTER_NODES:-}" ]; } &&
  ! { command -v redis-server && command -v redis-cli; } >/dev/null 2>&1; then
  started=$SECONDS
  need_apt redis-server
  echo "setup: installed $(redis-server --version | cut -d' ' -f1-3) in $((SECONDS - started)) s"
fi

# What no distribution package provides is built once into a cache that later runs reuse, and that
# packages/test-servers looks in (or where the variables named below point).
cache_dir="${RESUMABLE_CACHE_DIR:-$HOME/.cache/resumable}"
mkdir -p "$cache_dir"

# moto's DynamoDB server, from PyPI into its own venv. A venv cannot be moved (its scripts name their
# interpreter by absolute path), so it is built in place, and checked before it counts.
moto_version=5.2.5
moto_venv="${RESUMABLE_MOTO_VENV:-$cache_dir/moto-$moto_version}"
moto_works() {
  [ "$("$moto_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))' 2>/dev/null)" = "$moto_version" ] &&
    "$moto_venv/bin/moto_server" --help >/dev/null 2>&1
}
if [ -z "${RESUMABLE_MOTO_ENDPOINT:-}${RESUMABLE_DYNAMODB_ENDPOINT:-}" ] && ! moto_works; then
  started=$SECONDS
  command -v python3 >/dev/null 2>&1 || need_apt python3
  rm -rf "$moto_venv"
  # Debian's own python3 has no venv module without python3-venv.
  python3 -m venv "$moto_venv" >/dev/null 2>&1 || { rm -rf "$moto_venv" && need_apt python3-venv && python3 -m venv "$moto_venv"; }
  log="$cache_dir/moto-install.log"
  if ! "$moto_venv/bin/pip" install --quiet --disable-pip-version-check "moto[server,dynamodb]==$moto_version" >"$log" 2>&1 || ! moto_works; then
    cat "$log" >&2
    rm -rf "$moto_venv"
    echo "setup: could not install moto $moto_version into $moto_venv (pip's output above)" >&2
    exit 1
  fi
  rm -f "$log"
  echo "setup: installed moto $moto_version into $moto_venv in $((SECONDS - started)) s"
fi

# FerretDB (MongoDB's wire protocol over SQLite or PostgreSQL), built from its Go module. The module
# lacks build/version/version.txt, without which the binary panics at start (what a plain
# `go install` gives), so it is built from a writable copy with that file added.
ferretdb_version=v1.24.2
ferretdb_bin="${RESUMABLE_FERRETDB_BIN:-$cache_dir/ferretdb-${ferretdb_version#v}/ferretdb}"
ferretdb_works() {
  # Captured, not piped into `grep -q`: grep's early exit would SIGPIPE ferretdb, and pipefail fail it.
  local out
  out=$("$ferretdb_bin" --version 2>/dev/null) || return 1
  [[ $'\n'"$out"$'\n' == *$'\n'"version: $ferretdb_version"$'\n'* ]]
}
if [ -z "${RESUMABLE_MONGODB_URL:-}" ] && ! ferretdb_works; then
  started=$SECONDS
  go=$(command -v go || echo /usr/local/go/bin/go)
  if [ ! -x "$go" ]; then
    echo "setup: FerretDB is built with Go (1.24 or newer), which is not installed" >&2
    exit 1
  fi
  build_dir=$(mktemp -d)
  # Module cache copies are read-only; make them removable.
  trap 'chmod -R u+w "$build_dir" 2>/dev/null; rm -rf "$build_dir"' EXIT
  module_dir=$("$go" mod download -json "github.com/FerretDB/FerretDB@$ferretdb_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$module_dir" ] || [ ! -d "$module_dir" ]; then
    echo "setup: go mod download gave no directory for FerretDB $ferretdb_version" >&2
    exit 1
  fi
  cp -R "$module_dir" "$build_dir/src"
  chmod -R u+w "$build_dir/src"
  echo "$ferretdb_version" >"$build_dir/src/build/version/version.txt"
  # GOTOOLCHAIN=local: no toolchain download (the module asks for go 1.24); no VCS stamp in a copy.
  if ! (cd "$build_dir/src" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false "$go" build -trimpath -o "$build_dir/ferretdb" ./cmd/ferretdb) >"$build_dir/build.log" 2>&1; then
    cat "$build_dir/build.log" >&2
    echo "setup: could not build FerretDB $ferretdb_version (go's output above)" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$ferretdb_bin")"
  mv -f "$build_dir/ferretdb" "$ferretdb_bin"
  if ! ferretdb_works; then
    "$ferretdb_bin" --version >&2 || true
    echo "setup: the FerretDB binary built at $ferretdb_bin does not start" >&2
    exit 1
  fi
  echo "setup: built FerretDB $ferretdb_version at $ferretdb_bin in $((SECONDS - started)) s"
fi

pnpm install --frozen-lockfile
pnpm build
