"""grps protocol (NetEase-Media/grps) for modelplatform: HTTP and gRPC share one converter."""
