"""scenarios layer (see ../shared/DESIGN.md)."""
