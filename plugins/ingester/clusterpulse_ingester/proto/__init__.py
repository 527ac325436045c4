"""Generated protobuf/gRPC modules of clusterpulse.collector.v1 (do not edit; see protogen.py)."""
