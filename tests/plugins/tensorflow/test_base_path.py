"""TF Serving's model base path given as ``--model-repository``: served as that one model.

The migration's first step (docs/migration/from-tf-serving.md): the folder
TF Serving's ``--model_base_path`` named, holding only version folders, is
served under its own name, read where it lies.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

from modelplatform.testing import ServerProcess


def test_a_model_base_path_serves_as_its_model(tf_repository: Path, tmp_path: Path) -> None:
    base_path = tmp_path / "half_plus_two"
    shutil.copytree(tf_repository / "half_plus_two" / "1", base_path / "00000123")
    with ServerProcess("--model-repository", str(base_path), timeout=180) as server:
        body = json.dumps({"instances": [1.0, 3.0]}).encode()
        url = f"http://{server.http_url}/v1/models/half_plus_two:predict"
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=60) as response:
            assert json.loads(response.read()) == {"predictions": [2.5, 3.5]}
        with urllib.request.urlopen(
            f"http://{server.http_url}/v2/models/half_plus_two", timeout=60
        ) as response:
            assert json.loads(response.read())["versions"] == ["123"]
        assert "repository_is_one_model" in server.log()
    assert sorted(p.name for p in base_path.iterdir()) == ["00000123"]  # nothing written beside the versions
