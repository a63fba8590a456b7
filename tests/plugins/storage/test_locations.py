"""Triton's repository URL forms, taken apart (locations.py) and turned into fsspec options (credentials.py)."""

from __future__ import annotations

import pytest

from modelplatform import InvalidArgument
from modelplatform_storage.credentials import s3_endpoint, storage_options
from modelplatform_storage.locations import Location, parse


@pytest.mark.parametrize(
    ("url", "root", "endpoint"),
    [
        ("s3://bucket/path/to/models", "bucket/path/to/models", None),
        ("s3://bucket", "bucket", None),
        ("s3://bucket//models///", "bucket/models", None),
        ("s3://minio.local:9000/bucket/models", "bucket/models", "http://minio.local:9000"),
        ("s3://http://10.0.0.2:9000/bucket/models", "bucket/models", "http://10.0.0.2:9000"),
        ("s3://https://s3.example.com:8443/bucket/m", "bucket/m", "https://s3.example.com:8443"),
        ("s3://https://s3.example.com/bucket/m", "bucket/m", "https://s3.example.com"),
    ],
)
def test_s3_forms(url, root, endpoint):
    location = parse(url)
    assert location == Location(url, "s3", root, endpoint_url=endpoint)
    assert location.protocol == "s3" and location.bucket == root.split("/")[0]


def test_gs_and_as_forms():
    assert parse("gs://bucket/models") == Location("gs://bucket/models", "gs", "bucket/models")
    azure = parse("as://account/container/models")
    assert azure == Location("as://account/container/models", "as", "container/models", account="account")
    assert (azure.protocol, azure.extra) == ("abfs", "azure")


@pytest.mark.parametrize("url", ["hdfs://namenode/models", "http://host/models", "/models", "s3:/bucket"])
def test_other_schemes_are_left_to_other_plugins(url):
    assert parse(url) is None


@pytest.mark.parametrize(
    "url", ["s3://", "s3://Bad_Bucket/models", "s3://bucket/../etc", "as://account", "gs:///"]
)
def test_malformed_urls_are_refused_naming_the_url(url):
    with pytest.raises(InvalidArgument) as refused:
        parse(url)
    assert url in str(refused.value)


def test_kserve_variables_give_endpoint_region_and_tls():
    location = parse("s3://bucket/models")
    env = {"S3_ENDPOINT": "minio:9000", "S3_USE_HTTPS": "0", "AWS_REGION": "eu-west-1",
           "S3_VERIFY_SSL": "0"}  # fmt: skip
    options = storage_options(location, env)
    assert options["endpoint_url"] == "http://minio:9000"
    assert options["client_kwargs"] == {"region_name": "eu-west-1", "verify": False}
    assert s3_endpoint(location, {"S3_ENDPOINT": "minio:9000"}) == "https://minio:9000"


def test_endpoint_precedence_url_then_aws_endpoint_url_then_s3_endpoint():
    env = {"AWS_ENDPOINT_URL": "https://a.example", "S3_ENDPOINT": "b.example"}
    assert s3_endpoint(parse("s3://bucket/m"), env) == "https://a.example"
    assert s3_endpoint(parse("s3://c.example:9000/bucket/m"), env) == "http://c.example:9000"
    assert s3_endpoint(parse("s3://bucket/m"), {}) is None  # AWS's own, from the region


def test_triton_region_wins_and_a_ca_bundle_is_trusted():
    env = {"AWS_DEFAULT_REGION": "us-west-2", "AWS_REGION": "eu-west-1", "AWS_CA_BUNDLE": "/etc/ca.pem"}
    client = storage_options(parse("s3://bucket/m"), env)["client_kwargs"]
    assert client == {"region_name": "us-west-2", "verify": "/etc/ca.pem"}


def test_anonymous_access_as_kserve_spells_it():
    assert storage_options(parse("s3://bucket/m"), {"awsAnonymousCredential": "true"})["anon"] is True
    assert "anon" not in storage_options(parse("s3://bucket/m"), {})
