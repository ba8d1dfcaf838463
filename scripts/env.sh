# Shared setup of the project's scripts: build cache outside the clone, and the system packages the
# build and the tests need, installed when missing (apt-get as root) or named in one line otherwise.

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tabula/target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

have_libclang() {
    ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/x86_64-linux-gnu/libclang*.so* /usr/lib64/libclang*.so* 2>/dev/null | grep -q .
}

# ensure_packages CHECK-COMMAND DEBIAN-PACKAGE...
ensure_packages() {
    local check="$1"
    shift
    if eval "$check" >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $* (apt-get)" >&2
        if [ -z "${TABULA_APT_UPDATED:-}" ]; then
            DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
            export TABULA_APT_UPDATED=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
        eval "$check" >/dev/null 2>&1 && return 0
    fi
    echo "tabula: missing $*: install it (Debian: sudo apt-get install $*) and run again" >&2
    exit 1
}

ensure_build_deps() {
    command -v cargo >/dev/null 2>&1 || { echo "tabula: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
    ensure_packages have_libclang libclang-dev
}
