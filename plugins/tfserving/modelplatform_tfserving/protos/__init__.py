"""TF Serving's messages, generated from protos/modelplatform_tfserving (``make protos``).

They live in :data:`POOL`, a descriptor pool of their own, not protobuf's
default one: TensorFlow and tensorflow-serving-api register the same names
(``tensorflow.TensorShapeProto``, ...) there, and two files defining one name
in one pool refuse to load. Kept apart, both load in one process in either
order; the bytes on the wire and the ``Any`` type URLs are TF Serving's as
before. scripts/private_proto_pool.py points the generated modules here.
"""

from __future__ import annotations

from google.protobuf import any_pb2, descriptor_pool, wrappers_pb2

#: Where the generated modules register their files (never the default pool).
POOL = descriptor_pool.DescriptorPool()
for _imported in (any_pb2, wrappers_pb2):  # the well-known files serving_apis.proto imports
    POOL.AddSerializedFile(_imported.DESCRIPTOR.serialized_pb)
