"""Multi-agent debate (Du et al. 2023): rounds of agents reading each other, a vote (see .protocol)."""
