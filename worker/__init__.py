"""tsne-curator workers: the Celery app, its tasks, and the pure pipeline they call."""
