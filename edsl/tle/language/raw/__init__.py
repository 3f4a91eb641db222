"""`triton.experimental.tle.language.raw`: `call`, in both of TLE-Raw's forms,
and `call_smem` (edsl.fl)."""
from ....fl import call, call_smem

__all__ = ["call", "call_smem"]
