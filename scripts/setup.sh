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
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

if [ -z "${RESUMABLE_POSTGRES_URL:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need_apt postgresql
fi

pnpm install --frozen-lockfile
pnpm build
