"""lfx stand-in (see conformance/adapters/sbx_harness/lfx_standin/README.md)."""
