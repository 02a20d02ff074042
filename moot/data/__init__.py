"""Datasets: the dataset spec (DATA.yaml) and lazy reading of its rows as items."""
