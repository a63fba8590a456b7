"""grps's own monitor page (``/grps/v1/monitor``; ``/`` is the server's live page) renders charts with data in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

from .conftest import call, call_json

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)


def test_page_is_served_as_html_without_external_assets(grps_server: ServerProcess) -> None:
    status, headers, page = call(grps_server, "GET", "/grps/v1/monitor", content_type=None)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"/grps/v1/monitor/series" in page
    assert not re.search(rb"(src|href)=\"https?://", page), "the page must work offline"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make chromium)")
def test_dashboard_draws_charts_with_data(grps_server: ServerProcess, tmp_path: Path) -> None:
    for index in range(5):
        call_json(
            grps_server, "POST", "/grps/v1/infer/predict?model=identity_bytes", {"str_data": str(index)}
        )
    call_json(grps_server, "POST", "/grps/v1/infer/predict?model=identity_bytes", {"foo": 1})  # a failure
    time.sleep(1.1)  # the series reports whole seconds only
    command = [
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        f"http://{grps_server.http_url}/grps/v1/monitor",
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=90).stdout
    assert 'id="model-identity_bytes"' in dom, dom[:2000]
    qps = re.search(r'<svg[^>]*data-chart="qps"[^>]*data-model="identity_bytes"[^>]*>', dom)
    assert qps is not None
    assert float(re.search(r'data-max="([0-9.]+)"', qps.group(0)).group(1)) >= 1
    assert int(re.search(r'data-nonzero="(\d+)"', qps.group(0)).group(1)) >= 1
    latency = re.search(
        r'<svg[^>]*data-chart="latency"[^>]*data-model="identity_bytes"[^>]*>(.*?)</svg>', dom, re.S
    )
    assert latency is not None and latency.group(1).count("<polyline") == 3
    assert re.search(r'data-series="latency_p99_ms"', latency.group(1))
    assert "requests (last 60s): " in dom
