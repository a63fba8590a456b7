"""The reflection services: grpcio-reflection's servicer over every loaded service's descriptors.

v1alpha is grpcio-reflection's own service. v1 has the same messages, field for
field (grpc/reflection/v1/reflection.proto), in package ``grpc.reflection.v1``:
it is served by the same servicer (the bytes are the same), and its file is
v1alpha's renamed, in a pool of its own, so clients can describe it too.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.reflection import aio

from modelplatform import ServerContext

from .pools import PoolChain

V1ALPHA = "grpc.reflection.v1alpha.ServerReflection"
V1 = "grpc.reflection.v1.ServerReflection"
METHOD = "ServerReflectionInfo"


def v1_pool() -> descriptor_pool.DescriptorPool:
    """A pool holding grpc/reflection/v1/reflection.proto, made from v1alpha's file."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = "grpc.reflection.v1"
    for message in proto.message_type:
        for field in message.field:
            if field.HasField("type_name"):  # message fields only: scalars have none
                field.type_name = field.type_name.replace(".grpc.reflection.v1alpha.", ".grpc.reflection.v1.")
    for method in proto.service[0].method:
        method.input_type = method.input_type.replace(".v1alpha.", ".v1.")
        method.output_type = method.output_type.replace(".v1alpha.", ".v1.")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


def servicer_of(context: ServerContext) -> aio.ReflectionServicer:
    """One servicer per server, listing every declared service (reflection's own included)."""
    return context.shared(aio.ReflectionServicer, lambda: _servicer(context))


def _servicer(context: ServerContext) -> aio.ReflectionServicer:
    names = sorted({service.name for service in context.grpc_services})
    declared = [s.descriptor_pool for s in context.grpc_services if s.descriptor_pool is not None]
    own = list({id(pool): pool for pool in declared}.values())  # a service's own pool first
    chain = PoolChain([*own, descriptor_pool.Default(), v1_pool()])
    return aio.ReflectionServicer(names, pool=chain)


def add_v1alpha(server: Any, context: ServerContext) -> None:
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer_of(context), server)


def add_v1(server: Any, context: ServerContext) -> None:
    handler = grpc.stream_stream_rpc_method_handler(
        servicer_of(context).ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    # As generated stubs register theirs: by name (the v1 file is in no pool a stub would search).
    server.add_registered_method_handlers(V1, {METHOD: handler})
