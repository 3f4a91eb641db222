"""`triton.experimental.tle.language.raw`: `call`, in both of TLE-Raw's forms
(edsl.fl)."""
from ....fl import call

__all__ = ["call"]
