"""The Dagster UI in a real browser: `dagster dev` + Debian's headless Chromium via Playwright.

Starts `dagster dev -w workspace.yaml` (webserver + daemon, as ``make dev`` does) on a free
127.0.0.1 port with the repo's dagster.yaml as the instance config of a tmp DAGSTER_HOME (so
the run queue and pool settings are exercised for real), EDAQA_CORPUS holding two sample
manuals and EDAQA_STORAGE in tmp. Both document partitions are added to the instance first.
Chromium is Debian's (/usr/bin/chromium, installed by ``make setup-dev``); Playwright only
drives it (no browser download, ever). The test opens the asset graph, checks that our asset
groups and asset checks are shown, launches a materialisation of one document partition from
the "Materialize all" dialog, waits for the run to succeed in the Runs page, and saves
screenshots under the test's tmp folder. Everything is stopped by PID / process group.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from edaqa_pipeline_tests.dagster_fixtures import (
    REPO,
    VENV_BIN,
    copy_sample,
    free_port,
    reset_signals,
    stop_process_group,
    subprocess_env,
)

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]  # fmt: skip
DOCUMENTS = ["cts.md", "pdn.md"]
TARGET = "cts.md"
GROUPS = ("documents", "functional_units", "indexes", "evaluation")
# The "documents" group: what "Materialize all" in that group's graph selects.
GROUP_ASSETS = ("parsed_documents", "typed_artifacts", "chunks", "occurrences")
READY_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 180.0
UI_TIMEOUT_MS = 60_000


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dagster dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    pytest.fail(f"dagster dev not ready after {READY_TIMEOUT_S:.0f} s:\n{log.read_text()[-4000:]}")


def _dismiss_popups(page: Any) -> None:
    """The first visit may show a 'Join the Dagster community' dialog: skip it."""
    skip = page.get_by_role("button", name="Skip")
    if skip.count() and skip.first.is_visible():
        skip.first.click()


@pytest.fixture()
def dagster_dev(tmp_path: Path):  # type: ignore[no-untyped-def]
    from dagster import DagsterInstance

    home = tmp_path / "dagster_home"
    home.mkdir()
    # The repo's instance config as-is (it has no storage block: SQLite lands under home).
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    corpus = copy_sample(tmp_path / "corpus", DOCUMENTS)
    storage = tmp_path / "storage"
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("documents", DOCUMENTS)
    env = subprocess_env(storage, home, EDAQA_CORPUS=str(corpus), EDAQA_EXECUTOR="in_process")
    port = free_port()
    log = tmp_path / "dagster_dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1",
             "-p", str(port)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=reset_signals, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, base, log)
        yield {"base": base, "home": home, "storage": storage, "log": log}
    finally:
        stop_process_group(proc, grace_s=20.0)


def test_ui_shows_groups_checks_and_materialises_a_partition(dagster_dev, tmp_path: Path):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make setup-dev` installs Debian's chromium")
    from playwright.sync_api import expect, sync_playwright

    base = dagster_dev["base"]
    shots = tmp_path / "screenshots"
    shots.mkdir()
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)  # fmt: skip
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(UI_TIMEOUT_MS)
        try:
            # Global asset graph: every group of the code location is listed.
            page.goto(f"{base}/asset-groups", wait_until="domcontentloaded")
            page.get_by_role("button", name=re.compile("Materialize all")).wait_for()
            page.wait_for_timeout(1500)
            _dismiss_popups(page)
            for group in GROUPS:
                expect(page.get_by_text(group, exact=True).first).to_be_visible()
            page.screenshot(path=str(shots / "asset_graph.png"))

            # The documents group: its assets, each node with an "Asset checks" row.
            page.goto(f"{base}/locations/edaqa_pipeline/asset-groups/documents",
                      wait_until="domcontentloaded")  # fmt: skip
            page.get_by_role("button", name=re.compile("Materialize all")).wait_for()
            page.wait_for_timeout(1000)
            _dismiss_popups(page)
            expect(page.get_by_text("Asset checks").first).to_be_visible()
            page.screenshot(path=str(shots / "documents_group.png"))
            # The graph only renders the nodes in view: the List tab names every asset.
            page.get_by_role("tab", name="List").or_(page.get_by_text("List", exact=True)).first.click()
            for asset in GROUP_ASSETS:
                expect(page.get_by_text(asset, exact=True).first).to_be_visible()
            page.screenshot(path=str(shots / "documents_list.png"))

            # The checks of one asset, by name.
            page.goto(f"{base}/assets/parsed_documents?view=checks", wait_until="domcontentloaded")
            for check in ("structurally_valid", "great_expectations_suite"):
                expect(page.get_by_text(check, exact=True).first).to_be_visible()
            page.goto(f"{base}/assets/chunk_embeddings?view=checks", wait_until="domcontentloaded")
            expect(page.get_by_text("vectors_valid", exact=True).first).to_be_visible()
            page.screenshot(path=str(shots / "checks.png"))

            # Launch one partition of the documents group from the UI.
            page.goto(f"{base}/locations/edaqa_pipeline/asset-groups/documents",
                      wait_until="domcontentloaded")  # fmt: skip
            page.get_by_role("button", name=re.compile("Materialize all")).click()
            page.get_by_text("Select a partition or create one").click()
            page.locator("span", has_text=TARGET).first.click()
            page.keyboard.press("Escape")
            launch = page.get_by_role("button", name="Launch 1 run")
            expect(launch).to_be_enabled()
            page.screenshot(path=str(shots / "launch_dialog.png"))
            launch.click()
            launched = time.monotonic()
            toast = page.get_by_text(re.compile(r"Launched run [0-9a-f]{8}"))
            expect(toast).to_be_visible()
            short_id = re.search(r"[0-9a-f]{8}", toast.inner_text()).group(0)  # type: ignore[union-attr]

            # Wait for the run to succeed, as the Runs page shows it.
            page.goto(f"{base}/runs", wait_until="domcontentloaded")
            expect(page.get_by_text(short_id).first).to_be_visible()
            expect(page.get_by_text(f"partition: {TARGET}").first).to_be_visible()
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while time.monotonic() < deadline:
                if page.get_by_text("Success", exact=True).count():
                    break
                if page.get_by_text("Failure", exact=True).count():
                    pytest.fail(f"the run failed:\n{dagster_dev['log'].read_text()[-4000:]}")
                page.wait_for_timeout(1000)
            else:
                pytest.fail(f"no successful run after {RUN_TIMEOUT_S:.0f} s")
            run_s = time.monotonic() - launched
            page.screenshot(path=str(shots / "runs.png"))
        except Exception:
            page.screenshot(path=str(shots / "failure.png"))
            raise
        finally:
            browser.close()

    # What the UI showed is what happened: one successful run of that partition, its tables.
    from dagster import DagsterInstance, DagsterRunStatus

    with DagsterInstance.from_config(str(dagster_dev["home"])) as instance:
        runs = instance.get_runs()
        assert len(runs) == 1, [r.run_id for r in runs]
        (run,) = runs
        assert run.run_id.startswith(short_id)
        assert run.status == DagsterRunStatus.SUCCESS
        assert run.tags.get("dagster/partition") == TARGET
    tables = dagster_dev["storage"] / "tables"
    for asset in GROUP_ASSETS:
        assert (tables / asset / f"{TARGET}.parquet").is_file(), asset
        assert not (tables / asset / "pdn.md.parquet").exists(), asset
    for name in ("asset_graph", "documents_group", "documents_list", "checks", "launch_dialog",
                 "runs"):
        assert (shots / f"{name}.png").stat().st_size > 10_000, name
    print(json.dumps({"ui_s": round(time.monotonic() - started, 1), "run_s": round(run_s, 1),
                      "screenshots": str(shots)}))  # fmt: skip
