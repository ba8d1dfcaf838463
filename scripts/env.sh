# Shared setup of the project's scripts: build cache outside the clone, and the system packages the
# build and the tests need, installed when missing (apt-get as root) or named in one line otherwise.

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tabula/target}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

have_libclang() {
    local f
    # libclang itself (libclang.so, libclang-14.so.1), not libclang-cpp, which bindgen cannot use and which
    # other packages (Mesa's OpenCL, say) bring along.
    for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
        /usr/lib/*-linux-gnu/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* /usr/lib64/libclang.so* /usr/lib64/libclang-[0-9]*.so*; do
        [ -e "$f" ] && return 0
    done
    return 1
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

# The client drivers the end-to-end tests use besides tokio-postgres and psql: Python (psycopg 3, psycopg2,
# asyncpg, pandas, SQLAlchemy, Django, Alembic) in a virtualenv, node-postgres and Knex, pgjdbc with a JDK,
# and ActiveRecord with ruby-pg. Kept in ~/.cache/tabula.
ensure_drivers() {
    local cache="${TABULA_CACHE:-$HOME/.cache/tabula}"
    mkdir -p "$cache"
    ensure_packages "command -v python3" python3
    ensure_packages "python3 -m venv --help" python3-venv
    if [ ! -x "$cache/venv/bin/python" ]; then
        python3 -m venv "$cache/venv" >&2
    fi
    if ! "$cache/venv/bin/python" -c "import psycopg, psycopg2, asyncpg, pandas, sqlalchemy, django, alembic" >/dev/null 2>&1; then
        echo "installing Python drivers (pip)" >&2
        "$cache/venv/bin/pip" install -q "psycopg[binary]" psycopg2-binary asyncpg pandas sqlalchemy "django>=5.2,<5.3" alembic >&2
    fi
    export TABULA_PYTHON="$cache/venv/bin/python"
    ensure_packages "command -v node && command -v npm" nodejs npm
    if [ ! -d "$cache/node/node_modules/pg" ] || [ ! -d "$cache/node/node_modules/knex" ]; then
        echo "installing node-postgres and Knex (npm)" >&2
        mkdir -p "$cache/node"
        npm install --silent --no-audit --no-fund --prefix "$cache/node" pg knex >&2
    fi
    export TABULA_NODE_MODULES="$cache/node/node_modules"
    ensure_packages "command -v javac" default-jdk-headless
    ensure_packages "test -f /usr/share/java/postgresql.jar" libpostgresql-jdbc-java
    export TABULA_PGJDBC_JAR=/usr/share/java/postgresql.jar
    # Rails' ActiveRecord and ruby-pg, as Debian packages them.
    ensure_packages "ruby -e 'require \"active_record\"; require \"pg\"'" ruby ruby-pg ruby-activerecord
}
