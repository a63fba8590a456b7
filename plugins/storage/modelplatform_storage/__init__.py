"""modelplatform-storage: a model repository in S3, GCS or Azure Blob, mirrored locally (fsspec)."""
