"""A throwaway PostgreSQL server for the tests: made by ``initdb`` in a temporary
directory from the machine's PostgreSQL binaries, listening on a free port of
127.0.0.1 (and a unix socket in the same directory), trusting local connections,
stopped and deleted at the end. The ``postgres_conninfo`` fixture of conftest.py
starts one per test process; where no binaries are installed, its tests are
skipped with the reason.

PostgreSQL refuses to run as root: as root (CI), the server runs as the
``postgres`` system user that Debian's ``postgresql`` package makes.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PostgresServer", "find_binaries"]

# Where Debian and Ubuntu install each version's binaries.
BINARIES = "/usr/lib/postgresql/*/bin"


def find_binaries() -> tuple[Path | None, str]:
    """The newest version's binaries directory, or ``None`` and why not."""
    found = [
        Path(d)
        for d in glob.glob(BINARIES)
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists()
    ]
    if not found:
        return (
            None,
            f"no PostgreSQL binaries in {BINARIES} (apt-get install postgresql)",
        )
    found.sort(key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return None, "running as root, and no 'postgres' user to run the server as"
    return found[-1], ""


PORT_ATTEMPTS = 5  # ports tried in turn, each free when picked


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One server: :meth:`start`, connect with :attr:`conninfo`, :meth:`stop`.

    Args:
        binaries: the directory of ``initdb`` and ``pg_ctl``.
    """

    def __init__(self, binaries: Path) -> None:
        self._binaries = binaries
        self._directory = Path(tempfile.mkdtemp(prefix="fluent-executors-pg-"))
        self._data = self._directory / "data"
        self.port = _free_port()

    @property
    def conninfo(self) -> str:
        """The connection string of the server (``str``)."""
        return (
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres "
            "connect_timeout=10"
        )

    def _run(self, *args: str) -> None:
        command = [str(self._binaries / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}):\n"
                f"{done.stdout}\n{done.stderr}"
            )

    def start(self) -> None:
        """Make the cluster and start the server; return once it accepts
        connections."""
        if os.geteuid() == 0:
            shutil.chown(self._directory, "postgres", "postgres")
        self._run(
            "initdb",
            "--pgdata",
            str(self._data),
            "--username",
            "postgres",
            "--auth",
            "trust",
            "--no-sync",
            "--encoding",
            "UTF8",
        )
        # The port was free when picked, but another process (another test
        # process starting its own server) may take it before the server binds
        # it: then the server is started again on another free port.
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_on_port()
                return
            except RuntimeError:
                log = self._directory / "server.log"
                if attempt == PORT_ATTEMPTS or "could not bind" not in (
                    log.read_text() if log.exists() else ""
                ):
                    raise
                self.port = _free_port()

    def _start_on_port(self) -> None:
        options = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self._directory} -c fsync=off "
            "-c full_page_writes=off"
        )
        self._run(
            "pg_ctl",
            "start",
            "--pgdata",
            str(self._data),
            "--wait",
            "--timeout",
            "60",
            "--log",
            str(self._directory / "server.log"),
            "-o",
            options,
        )

    def restart(self) -> None:
        """Stop the server at once (every connection lost) and start it again."""
        self._run(
            "pg_ctl",
            "restart",
            "--pgdata",
            str(self._data),
            "--wait",
            "--mode",
            "immediate",
            "--log",  # (else the server holds the pipe that _run reads to its end)
            str(self._directory / "server.log"),
        )

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        try:
            if (self._data / "postmaster.pid").exists():
                self._run(
                    "pg_ctl", "stop", "--pgdata", str(self._data), "--mode", "immediate"
                )
        finally:
            shutil.rmtree(self._directory, ignore_errors=True)
