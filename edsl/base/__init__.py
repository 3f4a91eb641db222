"""What every layer uses and that is no compiler step: the errors with their
source locations (`errors`), the on-disk cache of compiled code (`cache`),
the checked template filler of the exported and runtime files (`templates`)."""
