"""What the user describes: cells (morphology, discretization policy, decor)."""
from .cell import Cell, PointProcess, format_location, parse_location

__all__ = ["Cell", "PointProcess", "format_location", "parse_location"]
