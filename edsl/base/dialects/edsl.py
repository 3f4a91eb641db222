"""edsl's own `edsl` ops (markers, placeholders): no op classes (see the package)."""
