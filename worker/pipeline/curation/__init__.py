"""The curation stage: from the map's clusters, the label evidence and the store's
decisions to each sample's fate.

``cluster_step`` sets DBSCAN's parameters and writes the clusters; ``rule_evidence`` writes
and reads the per-sample files the rules read (neighbours, agreement, the label evidence)
and the feature-quality ``gauge``; ``snapshot`` is the one read model of what happens to
every sample, which the CLI, export, evaluation, the API and the app all read;
``versions`` freezes that fate under a name (stored by ``storage/version_store.py``) and
``version_diff`` says how two versions, or a version and the live curation, differ.
"""
