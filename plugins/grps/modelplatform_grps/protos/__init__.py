"""Generated from protos/modelplatform_grps/protos/grps.proto (make protos)."""
