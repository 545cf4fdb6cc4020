"""The run's storage: the run directory, its locks, the curation store and its read model, the
job records.
"""
