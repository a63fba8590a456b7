import structlog

from modelplatform.models.repository import scan


def test_scan_reads_numeric_versions_and_warns_about_the_rest(tmp_path):
    model = tmp_path / "m"
    for name in ("1", "10", "2", "latest"):
        (model / name).mkdir(parents=True)
    (model / "config.pbtxt").write_text('name: "m"')
    (model / "notes.txt").write_text("x")
    (tmp_path / ".hidden").mkdir()
    with structlog.testing.capture_logs() as logs:
        entries = scan(tmp_path)
    assert list(entries) == ["m"]
    assert entries["m"].versions == (1, 2, 10)
    ignored = sorted(e["entry"] for e in logs if e["event"] == "repository_entry_ignored")
    assert ignored == ["latest", "notes.txt"]


def test_missing_repository_is_empty(tmp_path):
    assert scan(tmp_path / "absent") == {}


def test_a_labels_file_the_config_names_is_a_known_entry(tmp_path):
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'output [ { name: "P" data_type: TYPE_FP32 dims: [ 3 ] label_filename: "labels.txt" } ]'
    )
    (model / "labels.txt").write_text("a\nb\nc\n")
    (model / "other.txt").write_text("x")
    with structlog.testing.capture_logs() as logs:
        scan(tmp_path)
    assert [e["entry"] for e in logs if e["event"] == "repository_entry_ignored"] == ["other.txt"]
