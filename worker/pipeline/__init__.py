"""Pure pipeline: datasets, models, features, embedding, clustering, curation, export.

Nothing in this package imports Dash, Celery or Redis, so a notebook, the CLI, a Celery
task and a test all call the same functions.
"""
