"""Retraining with PyTorch DDP: the torchrun entry point and its launcher."""
