#!/usr/bin/env bash
# The Python client's tests, as ctest runs them (python_client): the package installed offline
# with pip into a virtual environment that sees the system's packages (Debian's grpcio,
# protobuf, PyYAML, pytest, cryptography), as a user installs it, then pytest against the
# admitd binary $ADMITD_BIN.
#   bash clients/python/tests/run.sh BUILD_DIR [pytest args...]
set -euo pipefail
client=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [pytest args...]}" && pwd)
shift
venv=$build/python-venv
/usr/bin/python3 -m venv --system-site-packages --clear "$venv"
# A private copy of the sources: pip builds in the source tree, and the checkout stays clean.
src=$build/python-client-src
rm -rf "$src" && mkdir -p "$src/clients"
cp -r "$client" "$src/clients/python"
rm -rf "$src/clients/python/build" "$src/clients/python/"*.egg-info
ln -s "$client/../../protos" "$src/protos"
"$venv/bin/pip" install --quiet --no-index "$src/clients/python"
cd "$client/tests"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@" .
