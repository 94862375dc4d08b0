"""kmviz test suite (a package, so spawned worker processes can import test helpers)."""
