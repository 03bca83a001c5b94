"""Tune layer: candidates, the model, ranking and measurement."""
