"""lfx stand-in (see conformance/adapters/lfx_standin/README.md)."""
