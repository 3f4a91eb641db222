"""A kernel with a while loop whose condition reads what its transfers
bring: for the tests of an error that must end the loop, on the DPU model
(tests/backend) and in the exported project (tests/export)."""
import triton
import triton.language as tl


@triton.jit
def find_seven(x_ptr, out_ptr):
    i = 0
    v = tl.load(x_ptr)
    while v != 7:
        i += 1
        v = tl.load(x_ptr + i)  # past the end
    tl.store(out_ptr, i)
