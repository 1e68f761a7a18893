"""The Envoy ext_proc endpoint picker (docs/gateway.md)."""
