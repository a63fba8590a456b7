"""Settings of the model repository API: upload switch and restricted header."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument
from modelplatform.composition.options import resolve
from modelplatform.models.repository import fingerprint, model_names


def test_upload_and_restriction_defaults_are_closed():
    settings = resolve(env={})
    assert (
        settings.options_for("repository")["allow_file_upload"] is False
        and settings.repository_restrict == ""
    )


def test_settings_from_env_and_flags():
    settings = resolve(
        env={"MODELPLATFORM_ALLOW_FILE_UPLOAD": "true"}, overrides={"repository_restrict": "x-key:v:1"}
    )
    assert (
        settings.options_for("repository")["allow_file_upload"] is True
        and settings.repository_restrict == "x-key:v:1"
    )


@pytest.mark.parametrize("bad", ["no-colon", ":value", "key:"])
def test_restriction_must_be_header_and_value(bad):
    with pytest.raises(InvalidArgument, match="repository_restrict"):
        resolve(env={}, overrides={"repository_restrict": bad})


def test_fingerprint_sees_growth_and_new_folders_but_not_bytecode(tmp_path):
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text("x = 1")
    first = fingerprint(model)
    (model / "1" / "__pycache__").mkdir()
    (model / "1" / "__pycache__" / "model.pyc").write_bytes(b"...")
    (model / ".hidden").write_text("editor swap file")
    assert fingerprint(model) == first
    (model / "1" / "model.py").write_text("x = 12")
    assert fingerprint(model) != first
    second = fingerprint(model)
    (model / "2").mkdir()
    assert fingerprint(model) != second
    assert model_names(tmp_path) == ["m"] and model_names(tmp_path / "absent") == []


def test_serve_has_the_flags():
    import os
    import subprocess
    import sys

    # A subprocess: `serve` knows the plugins' flags (--allow-file-upload is the repository
    # plugin's) only once `main` loaded their declarations.
    result = subprocess.run([sys.executable, "-m", "modelplatform", "serve", "--help"],
                            capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert result.returncode == 0
    assert "--allow-file-upload" in result.stdout and "--repository-restrict" in result.stdout
