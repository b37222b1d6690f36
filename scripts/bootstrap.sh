# Sourced by scripts/demo and scripts/test: system packages, then a virtual environment at $VENV.
# Installs Graphviz (and python3-venv; poppler-utils and chromium when asked) from Debian's packages when missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "annograph setup: need root (or sudo) to run: $*" >&2; exit 1; fi
}

apt_install() {
    if ! command -v apt-get >/dev/null; then
        echo "annograph setup: please install: $* (no apt-get on this machine)" >&2; exit 1
    fi
    if [ -z "${APT_UPDATED:-}" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need_packages=()
command -v dot >/dev/null || need_packages+=(graphviz)
if [ "${NEED_POPPLER:-}" = 1 ]; then command -v pdftoppm >/dev/null || need_packages+=(poppler-utils); fi
if [ "${NEED_CHROMIUM:-}" = 1 ]; then [ -x /usr/bin/chromium ] || need_packages+=(chromium); fi
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    need_packages+=("python3-venv")
fi
if [ "${#need_packages[@]}" -gt 0 ]; then
    echo "annograph setup: installing ${need_packages[*]} from Debian's packages" >&2
    apt_install "${need_packages[@]}"
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
