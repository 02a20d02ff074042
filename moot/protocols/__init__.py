"""The protocols moot runs, one module or sub-package each; moot.protocols.registry lists them."""
