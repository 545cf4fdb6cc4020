"""The shared 2-D map and what is read off it: PCA + t-SNE, per-class DBSCAN, and the label
evidence its flag rule uses.
"""
