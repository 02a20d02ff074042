"""The bundled demo datasets (package data): `moot run cola --dataset demo-stance` finds
demo-stance.yaml here, and its data file beside it in demo/."""
