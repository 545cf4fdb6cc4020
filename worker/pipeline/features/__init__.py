"""The networks and the extraction of penultimate-layer features.
"""
