"""failover-harness: one user intent, one job — proven against real databases and wire formats."""

__version__ = "0.1.0"
