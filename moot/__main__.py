"""`python -m moot ...` is the `moot` command (also from an unpacked wheel, without the console script)."""

from moot.cli import main_exit

main_exit()
