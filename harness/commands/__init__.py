"""The CLI commands, one module each (see harness.cli)."""
