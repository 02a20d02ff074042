"""The bundled scenario files (package data): `moot run NAME` finds NAME.yaml here."""
