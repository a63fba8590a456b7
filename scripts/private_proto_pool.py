"""Move generated ``*_pb2.py`` modules from protobuf's default descriptor pool to a private one.

protoc's Python code registers every file in ``descriptor_pool.Default()``,
one namespace per process. The TF Serving plugin's messages keep TF Serving's
names (``tensorflow.TensorProto``, ``tensorflow.serving.PredictRequest``) so
the wire and ``Any`` type URLs stay TF Serving's, and TensorFlow registers
the same names from its own files: whichever imports second fails with
``duplicate symbol``. Built into the package's own pool (``POOL`` in the
package's ``__init__``), ours never meet TensorFlow's, whatever the order.

Usage: ``python scripts/private_proto_pool.py <folder of _pb2.py files> <package>``
(``make protos`` runs it after protoc; the staleness test too).
"""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_IMPORT = "from google.protobuf import descriptor_pool as _descriptor_pool\n"
DEFAULT_POOL = "_descriptor_pool.Default()"


def rewrite(source: str, package: str) -> str:
    """One generated module's text, registering in ``package.POOL`` instead of the default pool."""
    if DEFAULT_IMPORT not in source or DEFAULT_POOL not in source:
        raise ValueError("not protoc's Python output (no default pool to replace)")
    private = f"from {package} import POOL as _POOL  # private pool: scripts/private_proto_pool.py\n"
    return source.replace(DEFAULT_IMPORT, private).replace(DEFAULT_POOL, "_POOL")


def main(folder: str, package: str) -> None:
    for path in sorted(Path(folder).glob("*_pb2.py")):
        path.write_text(rewrite(path.read_text(), package))


if __name__ == "__main__":
    main(*sys.argv[1:3])
