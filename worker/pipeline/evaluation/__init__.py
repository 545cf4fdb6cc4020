"""Scores against known truth and the feature-quality gauge: detection metrics, findings
scores, the evaluate report.
"""
