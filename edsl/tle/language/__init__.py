"""`triton.experimental.tle.language`: what Triton kernels call."""
