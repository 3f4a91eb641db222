// The program around a converted kernel (edsl.backend.convert.runtime_text):
// the declarations of the DPU runtime library it calls (linked when the
// program is built, edsl.dpu.support), the kernel's own declaration (so that
// this text verifies on its own), `__dpu_main` and `__dpu_launch`.
//
// `__dpu_main` is what every tasklet of a DPU runs: the program instances of
// that DPU, ids first .. end-1, one at a time,
// with the tasklet's launch context `ctx`. Tasklets that meet at no barrier
// in an instance yield after it (`after_instance`): on the model, where a
// DPU's tasklets take turns on one host thread, they then work through the
// arrays together, as a DPU's tasklets do (a tasklet that ran all its chunks
// before the next one started would touch a new page at each chunk).
// `__dpu_launch` runs `__dpu_main`
// for DPUs first..end-1 in turn on tasklet `tid`, each with its context (the
// contexts are laid out DPU by DPU, tasklet by tasklet) and its block of
// consecutive program instances (abi.dpu_programs: DPU d of `dpus` runs
// d*q + min(d, r) and the q (+1 where d < r) after it, q, r = total divmod
// dpus): one host call per tasklet for a whole launch.
  llvm.func @${dma}(i64, i64, i64, i64, i64, !llvm.ptr) attributes {sym_visibility = "private"}
  llvm.func @${note}(i64, i64, i64, i64, !llvm.ptr) attributes {sym_visibility = "private"}
  llvm.func @${watch_wait}(i64, i64, i64, i64, !llvm.ptr) attributes {sym_visibility = "private"}
  llvm.func @${fail}(!llvm.ptr, i64, i64, i64, i64, i64, i64) attributes {sym_visibility = "private"}
  llvm.func @${failed}(!llvm.ptr) -> i1 attributes {sym_visibility = "private"}
  llvm.func @${barrier}(i64) attributes {sym_visibility = "private"}
  llvm.func @${enter}(!llvm.ptr) attributes {sym_visibility = "private"}
  llvm.func @${exit}(!llvm.ptr) attributes {sym_visibility = "private"}
  llvm.func @${tasklet_yield}(!llvm.ptr) attributes {sym_visibility = "private"}
  // (for `tl.device_print`, edsl.backend.convert.debug)
  llvm.func @printf(!llvm.ptr, ...) -> i32
  llvm.func @fflush(!llvm.ptr) -> i32

  func.func private @${kernel}(${kernel_types})

  func.func @${main}(${params}${main_params}) {
    %gxy = arith.muli %grid_x, %grid_y : i32
    %one = arith.constant 1 : i32
    scf.for %p = %first to %end step %one : i32 {
      %pid_x = arith.remsi %p, %grid_x : i32
      %q = arith.divsi %p, %grid_x : i32
      %pid_y = arith.remsi %q, %grid_y : i32
      %pid_z = arith.divsi %p, %gxy : i32
      ${kernel_call}
      ${after_instance}
    }
    return
  }

  func.func @${launch}(${params}${launch_params}) {
    %c1 = arith.constant 1 : i32
    %tasklets = arith.constant ${tasklets} : i64
    %slots = arith.constant ${ctx_slots} : i64
    %tid64 = arith.extsi %tid : i32 to i64
    %gxy = arith.muli %grid_x, %grid_y : i32
    %total = arith.muli %gxy, %grid_z : i32
    %share = arith.divui %total, %dpus : i32
    %extra = arith.remui %total, %dpus : i32
    ${runs_main}
    scf.for %d = %first_dpu to %end_dpu step %c1 : i32 {
      %before = arith.muli %d, %share : i32
      %ahead = arith.minui %d, %extra : i32
      %first = arith.addi %before, %ahead : i32
      %longer = arith.cmpi ult, %d, %extra : i32
      %plus = arith.extui %longer : i1 to i32
      %count = arith.addi %share, %plus : i32
      %end = arith.addi %first, %count : i32
      %d64 = arith.extsi %d : i32 to i64
      %row = arith.muli %d64, %tasklets : i64
      %k = arith.addi %row, %tid64 : i64
      %off = arith.muli %k, %slots : i64
      %tctx = llvm.getelementptr %ctx[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      llvm.call @${enter}(%tctx) : (!llvm.ptr) -> ()
      scf.if %runs {
        ${main_call}
      }
      llvm.call @${exit}(%tctx) : (!llvm.ptr) -> ()
    }
    return
  }
