"""Everything the chapters use: their analyses, stored sweeps, charts, rendering and live panels.

This layer reads the engine, the scenarios and the fitting code; nothing below it imports it.
"""
