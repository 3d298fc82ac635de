"""The parts of bench/fuzz_fronts.py (see its docstring): what they share, and one module
per front end."""
