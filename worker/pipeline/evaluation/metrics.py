"""The detection metrics under their former name: they are a base module of the pipeline
now (:mod:`worker.pipeline.metrics`), below the finding kinds that score themselves with
them. Import them from there."""

from worker.pipeline.metrics import auroc, detection_scores, f1_of, prf, prf_of

__all__ = ["auroc", "detection_scores", "f1_of", "prf", "prf_of"]
