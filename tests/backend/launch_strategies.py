"""Hypothesis strategies every launch test draws from: DPU and tasklet counts."""
from hypothesis import strategies as st


def strategies():
    return st.sampled_from([1, 3, 4]), st.sampled_from([1, 16])
