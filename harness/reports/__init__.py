"""reports layer (see ../shared/DESIGN.md)."""
