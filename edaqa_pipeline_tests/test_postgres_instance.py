"""Instance storage by configuration: the same build on a PostgreSQL instance (dagster-postgres)
as on the default SQLite one, byte for byte.

A real PostgreSQL server (Debian's ``postgresql`` package, installed by ``make setup-dev``)
is created by the test in a tmp folder (``initdb``), started with ``pg_ctl`` on a free
127.0.0.1 port, and stopped by its PID (``postmaster.pid``) at the end. PostgreSQL refuses to
run as root, so under root the server runs as the ``postgres`` system user the package
creates. ``EDAQA_POSTGRES_URL`` set when a storage root is first used makes ``edaqa index``
write a dagster.yaml with PostgreSQL storage for it; everything else is unchanged.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edaqa_pipeline_tests.dagster_fixtures import copy_sample, free_port, offline_environment

pytestmark = pytest.mark.slow

DOCUMENTS = ["cts.md", "pdn.md"]


def _bin_dir() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not candidates:
        pytest.fail("PostgreSQL is missing: `make setup-dev` installs Debian's postgresql")
    return Path(candidates[-1]).parent


def _as_server_user() -> tuple[dict[str, int], object]:
    """(uid/gid to chown to, preexec_fn) for the server processes: ourselves, or the
    ``postgres`` user when we are root (initdb and postgres refuse root)."""
    if os.geteuid() != 0:
        return {}, None
    user = pwd.getpwnam("postgres")

    def demote() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    return {"uid": user.pw_uid, "gid": user.pw_gid}, demote


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bin_dir = _bin_dir()
    owner, demote = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="edaqa_pg_"))  # not under root's 0700 pytest folder
    data, sockets, log = root / "data", root / "sockets", root / "server.log"
    sockets.mkdir()
    if owner:
        for path in (root, sockets):
            os.chown(path, owner["uid"], owner["gid"])
    port = free_port()

    def run(*args: str) -> None:
        proc = subprocess.run(args, preexec_fn=demote, capture_output=True, text=True,  # type: ignore[arg-type]
                              timeout=120, stdin=subprocess.DEVNULL, cwd=root)
        assert proc.returncode == 0, f"{args[0]}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"

    pid = None
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", "edaqa", "--auth=trust", "-E", "UTF8",
            "--no-instructions")
        run(str(bin_dir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(data), "-l", str(log),
            "-o", f"-p {port} -h 127.0.0.1 -k {sockets} -c fsync=off")
        pid = int((data / "postmaster.pid").read_text().split()[0])
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "edaqa", "dagster")
        yield f"postgresql+psycopg2://edaqa@127.0.0.1:{port}/dagster"
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # fast shutdown
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
        shutil.rmtree(root, ignore_errors=True)


def _hashes(manifest: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {name: table["content_hash"] for name, table in manifest["tables"].items()}


def test_postgres_instance_builds_the_same_tables_as_sqlite(postgres_url: str, tmp_path: Path) -> None:
    from edaqa_pipeline.cli.index import index_corpus, instance_for

    corpus = copy_sample(tmp_path / "corpus", DOCUMENTS)
    with offline_environment() as env:
        env.setenv("DAGSTER_HOME", str(tmp_path))  # index_corpus repoints it; restored after
        sqlite = index_corpus(corpus, tmp_path / "sqlite", log=lambda *_: None)
        env.setenv("EDAQA_POSTGRES_URL", postgres_url)
        started = time.perf_counter()
        postgres = index_corpus(corpus, tmp_path / "postgres", log=lambda *_: None)
        build_s = time.perf_counter() - started
        instance = instance_for(tmp_path / "postgres")
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        runs = len(instance.get_runs())
        assert runs >= 1
        again = index_corpus(corpus, tmp_path / "postgres", log=lambda *_: None)
        assert again.reindexed == [] and len(instance_for(tmp_path / "postgres").get_runs()) == runs
    config = (tmp_path / "postgres" / "dagster_home" / "dagster.yaml").read_text()
    assert "postgres_url" in config and postgres_url not in config  # the URL stays in the env
    assert "postgres_url" not in (tmp_path / "sqlite" / "dagster_home" / "dagster.yaml").read_text()
    assert postgres.documents == sqlite.documents == sorted(DOCUMENTS)
    assert postgres.failed == sqlite.failed == []
    assert _hashes(postgres.manifest) == _hashes(sqlite.manifest)
    assert len(_hashes(sqlite.manifest)) >= 10
    print(json.dumps({"postgres_build_s": round(build_s, 1)}))
