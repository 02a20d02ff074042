"""COLA (Lan et al.): analysis stage, debating stage, stance conclusion — for one item."""
