"""The pure core: what the kernel's answers mean, the tracker's decisions, output cleaning and the
result, with no clock, descriptor or /proc of their own (`tests/test_layers.py` holds every module here to that)."""
