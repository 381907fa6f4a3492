"""A real PostgreSQL server for the store tests, and one fresh database per test.

CI (``.ci/run``) starts Debian's server with password logins over TCP and exports
``PG_HOST``/``PG_PORT``/``PG_USER``/``PG_PASSWORD``. Without them, the session starts one the
same way (``initdb`` + ``pg_ctl`` as the ``postgres`` user) when the binaries are installed and
we may switch to that user; otherwise the PostgreSQL tests skip with the reason.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from typing import NamedTuple

import pytest

#: The superuser password of a server the tests start themselves.
LOCAL_PASSWORD = "dsbo-test-password"


class Server(NamedTuple):
    host: str
    port: str
    user: str
    password: str | None  # None: the server trusts every TCP login

    def url(self, database: str, user: str | None = None, password: str | None = None) -> str:
        user, password = user or self.user, password if password is not None else self.password
        login = user + (f":{password}" if password else "")
        return f"postgresql://{login}@{self.host}:{self.port}/{database}"


def _start_local_server() -> tuple[Server, callable] | str:
    """Start a throwaway server; returns ``(server, stop)`` or the reason it cannot."""
    bins = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: [int(s) for s in p.split("/")[-2].split(".") if s.isdigit()],
    )
    if not bins:
        return "no PostgreSQL server binaries (apt-get install postgresql, or set PG_HOST/PG_PORT)"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "PostgreSQL binaries found, but initdb must run as the postgres user (run as root, or set PG_HOST/PG_PORT)"
    pgbin, data = bins[-1], tempfile.mkdtemp(prefix="dsbo-pg-")
    port = str(55000 + os.getpid() % 5000)
    run = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run(["chown", "postgres:", data], check=True)
        pwfile = os.path.join(data, "pw")
        with open(pwfile, "w") as fh:
            fh.write(LOCAL_PASSWORD)
        subprocess.run(["chown", "postgres:", pwfile], check=True)
        subprocess.run(
            [
                *run,
                f"{pgbin}/initdb",
                "-D",
                f"{data}/data",
                "-U",
                "postgres",
                "--no-sync",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                *run,
                f"{pgbin}/pg_ctl",
                "-D",
                f"{data}/data",
                "-l",
                f"{data}/log",
                "-w",
                "-o",
                f"-k {data} -c listen_addresses=127.0.0.1 -p {port} -F",
                "start",
            ],
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(data, ignore_errors=True)
        return f"cannot start a PostgreSQL server: {exc}"

    def stop() -> None:
        subprocess.run(
            [*run, f"{pgbin}/pg_ctl", "-D", f"{data}/data", "-m", "immediate", "-w", "stop"],
            capture_output=True,
        )
        shutil.rmtree(data, ignore_errors=True)

    return Server("127.0.0.1", port, "postgres", LOCAL_PASSWORD), stop


_STARTED: list = []  # the one server this session started (test modules share it), or why not


def _local_server() -> Server | str:
    if not _STARTED:
        started = _start_local_server()
        if isinstance(started, str):
            _STARTED.append(started)
        else:
            server, stop = started
            atexit.register(stop)
            _STARTED.append(server)
    return _STARTED[0]


@pytest.fixture(scope="session")
def postgres_server():
    """A running :class:`Server` (the PostgreSQL tests skip if none can start)."""
    pytest.importorskip("psycopg", reason="the `scale` extra (psycopg) is not installed")
    if os.environ.get("PG_HOST"):
        return Server(
            os.environ["PG_HOST"],
            os.environ.get("PG_PORT", "5432"),
            os.environ.get("PG_USER", "postgres"),
            os.environ.get("PG_PASSWORD") or None,
        )
    server = _local_server()
    if isinstance(server, str):
        pytest.skip(server)
    return server


@contextlib.contextmanager
def fresh_database(server: Server):
    """A new, empty database on ``server``; its URL. Dropped afterwards."""
    import psycopg

    name = f"dsbo_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield server.url(name)
    finally:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh database for this test."""
    with fresh_database(postgres_server) as url:
        yield url
