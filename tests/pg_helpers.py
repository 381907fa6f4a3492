"""A real PostgreSQL server for the store tests, and one fresh database per test.

CI (``.ci/run``) starts Debian's server and exports ``PG_HOST``/``PG_PORT``. Without them,
the session starts one the same way (``initdb`` + ``pg_ctl`` as the ``postgres`` user) when
the binaries are installed and we may switch to that user; otherwise the PostgreSQL tests skip
with the reason.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest


def _start_local_server() -> tuple[str, str, callable] | str:
    """Start a throwaway server; returns ``(host, port, stop)`` or the reason it cannot."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(s) for s in p.split("/")[-2].split(".") if s.isdigit()])
    if not bins:
        return "no PostgreSQL server binaries (apt-get install postgresql, or set PG_HOST/PG_PORT)"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "PostgreSQL binaries found, but initdb must run as the postgres user (run as root, or set PG_HOST/PG_PORT)"
    pgbin, data = bins[-1], tempfile.mkdtemp(prefix="dsbo-pg-")
    port = str(55000 + os.getpid() % 5000)
    run = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run(["chown", "postgres:", data], check=True)
        subprocess.run([*run, f"{pgbin}/initdb", "-D", f"{data}/data", "-A", "trust", "-U", "postgres", "--no-sync"],
                       check=True, capture_output=True)
        subprocess.run([*run, f"{pgbin}/pg_ctl", "-D", f"{data}/data", "-l", f"{data}/log", "-w", "-o",
                        f"-k {data} -c listen_addresses=127.0.0.1 -p {port} -F", "start"], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(data, ignore_errors=True)
        return f"cannot start a PostgreSQL server: {exc}"

    def stop() -> None:
        subprocess.run([*run, f"{pgbin}/pg_ctl", "-D", f"{data}/data", "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)

    return "127.0.0.1", port, stop


@pytest.fixture(scope="session")
def postgres_server():
    """``(host, port)`` of a running server (the PostgreSQL tests skip if none can start)."""
    pytest.importorskip("psycopg", reason="the `scale` extra (psycopg) is not installed")
    if os.environ.get("PG_HOST"):
        yield os.environ["PG_HOST"], os.environ.get("PG_PORT", "5432")
        return
    started = _start_local_server()
    if isinstance(started, str):
        pytest.skip(started)
    host, port, stop = started
    try:
        yield host, port
    finally:
        stop()


def admin_url(server) -> str:
    host, port = server
    return f"postgresql://{os.environ.get('PG_USER', 'postgres')}@{host}:{port}/postgres"


@contextlib.contextmanager
def fresh_database(server):
    """A new, empty database on ``server``; its URL. Dropped afterwards."""
    import psycopg

    name = f"dsbo_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url(server), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    host, port = server
    try:
        yield f"postgresql://{os.environ.get('PG_USER', 'postgres')}@{host}:{port}/{name}"
    finally:
        with psycopg.connect(admin_url(server), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh database for this test."""
    with fresh_database(postgres_server) as url:
        yield url
