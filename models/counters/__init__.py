"""What a server's counters are and what they say: the capture's record, the evidence read from it, and the advice.

Below both the scenarios (whose diagnosis rules read this evidence) and the fitting (which reads a capture and
asks the scenarios), so that neither imports the other's way: scenarios never import :mod:`models.fitting`.
"""
