"""grps over gRPC: grps.protos.v1.GrpsService."""
