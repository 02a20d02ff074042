"""S2MAD (Zhang et al., Alg. 1): stance separation, initial opinions, debate, judge — one claim."""
