#!/usr/bin/env bash
# The wheel a user installs (#38): `python -m build` makes it, a clean virtualenv of INTERPRETER
# installs it with the runtime lock only (no torch, no dev tools, not this source tree), and
# `querywise demo` runs there, outside the repository: the package data is complete.
#
#   bash .ci/wheel_check.sh BUILDER_PYTHON [INTERPRETER]
#
# BUILDER_PYTHON has `build` (the dev lock); INTERPRETER (default: the builder) makes the clean venv.
set -euo pipefail
cd "$(dirname "$0")/.."
builder=${1:?usage: wheel_check.sh BUILDER_PYTHON [INTERPRETER]}
interpreter=${2:-$builder}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$SECONDS
"$builder" -m build --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/querywise-*.whl)

# Every file of the package in git (templates, prompts, demo data, py.typed...) is in the wheel.
"$builder" - "$wheel" <<'EOF'
import subprocess, sys, zipfile
tracked = subprocess.run(["git", "ls-files", "src/querywise"], capture_output=True, text=True, check=True).stdout.split()
inside = set(zipfile.ZipFile(sys.argv[1]).namelist())
missing = [p for p in tracked if p.removeprefix("src/") not in inside]
if missing:
    sys.exit(f"wheel lacks {len(missing)} package files: {missing[:10]}")
print(f"wheel: {len(tracked)} package files, all inside")
EOF

"$interpreter" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-deps -r requirements-runtime.lock "$wheel"
cd "$work"  # not the repository: only the installed wheel can be imported
if "$work/venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "the runtime lock installed torch" >&2; exit 1
fi
HF_HUB_OFFLINE=1 "$work/venv/bin/querywise" demo --index "$work/demo-index" >"$work/demo.log" 2>&1 || { tail -30 "$work/demo.log"; exit 1; }
grep -q "✓" "$work/demo.log" || { tail -30 "$work/demo.log"; echo "querywise demo found none of its expected results" >&2; exit 1; }
echo "wheel check: $(basename "$wheel") on $("$work/venv/bin/python" -V), querywise demo ran ($(grep -c "✓" "$work/demo.log") expected results found; $((SECONDS - start)) s)"
