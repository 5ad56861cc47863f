"""contracts layer (see ../shared/DESIGN.md)."""
