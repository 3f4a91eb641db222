  // Where the host has no usable ucontext, each tasklet is a thread of its
  // own (edsl.dpu.runtime) and no DPU has a scheduler to yield to.
  func.func private @__dpu_yield(%s: !llvm.ptr, %ctx: !llvm.ptr) {
    return
  }
