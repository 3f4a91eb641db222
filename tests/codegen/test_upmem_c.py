"""Raw DPU functions in UPMEM C compiled for the DPU model
(edsl.codegen.upmem_c): what is refused when they compile, at the line."""
import re

import pytest

import edsl
from edsl.base.errors import CompileError
from edsl.codegen import clang, upmem_c



def compile_text(text: str, name: str = "f", tasklets: int = 4) -> upmem_c.CompiledC:
    return upmem_c.compile_c(clang.Source(text, "/virtual/k.c"), tasklets, "", name)


def test_the_function_and_its_runtime_calls():
    c = compile_text("#include <defs.h>\n#include <mram.h>\n"
                     "void f(__mram_ptr int *m, int *w) { mram_read(m, w, 8); w[0] += me(); }\n")
    assert c.function.name == "f"
    assert c.function.params == ("ptr addrspace(255)", "ptr")
    assert "call void @edsl_dpu_mram_read(" in c.llvm and "call i32 @edsl_dpu_me()" in c.llvm
    # (the site of line 3, for the model's errors)
    assert re.search(rf"i64 (noundef )?{upmem_c.SITE_BASE + 3}\b", c.llvm)
    assert c.sites[upmem_c.SITE_BASE + 3].lineno == 3
    assert c.globals == ()


def test_nr_tasklets_is_the_launchs():
    c = compile_text("#include <defs.h>\nint sums[NR_TASKLETS];\nvoid f(void) { sums[me()] = 1; }\n", tasklets=11)
    assert "[11 x i32]" in c.llvm
    assert c.globals == ("sums",)


def test_a_clang_error_is_at_the_c_line():
    with pytest.raises(CompileError, match="undeclared identifier 'nope'") as err:
        compile_text("void f(int *w) {\n  w[0] = nope;\n}\n")
    assert (err.value.loc.filename, err.value.loc.lineno) == ("/virtual/k.c", 2)


def test_a_barrier_for_more_tasklets_than_the_dpu_runs_is_refused_where_it_is_declared():
    with pytest.raises(CompileError, match="BARRIER_INIT's count must be from 1 to NR_TASKLETS") as err:
        compile_text("#include <barrier.h>\n\nBARRIER_INIT(b, 5);\nvoid f(void) { barrier_wait(&b); }\n",
                     tasklets=4)
    assert err.value.loc.lineno == 3


def test_loads_and_stores_through_an_mram_pointer_are_checked_calls():
    c = compile_text("typedef struct { int a; float b; } pair;\n"
                     "void f(__mram_ptr int *m, __mram_ptr pair *p, int *w) {\n"
                     "  w[1] = m[3];\n"
                     "  p[1].b = 2.0f;\n"
                     "}\n")
    body = c.llvm.split("define dso_local void @f(")[1].split("\n}")[0]
    assert not re.search(r"(load|store) .*ptr addrspace\(255\)", body)
    assert re.search(rf"call i64 @__edsl_mram_load\(i64 %edsl\.mram\d+\.a, i64 4, i64 {upmem_c.SITE_BASE + 3}\)",
                     c.llvm)
    assert re.search(rf"call void @__edsl_mram_store\(i64 %edsl\.mram\d+\.a, i64 4, i64 %edsl\.mram\d+\.b, "
                     rf"i64 {upmem_c.SITE_BASE + 4}\)", c.llvm)


def test_other_accesses_through_an_mram_pointer_are_refused_at_their_line():
    with pytest.raises(CompileError, match="not a load or store of one number") as err:
        compile_text("void f(__mram_ptr int *m, int *w) {\n  w[0] = 1;\n"
                     "  __atomic_fetch_add(&m[1], 1, __ATOMIC_RELAXED);\n}\n")
    assert err.value.loc.lineno == 3
    with pytest.raises(CompileError, match="not a load or store of one number") as err:
        compile_text("typedef struct { int v[40]; } big;\n"
                     "void f(__mram_ptr big *m) {\n  m[1] = m[0];\n}\n")
    assert err.value.loc.lineno == 3


def test_mram_variables_are_the_hosts_with_mram_pointers_to_them():
    c = compile_text("#include <mram.h>\n__mram_noinit int table[64];\n__mram int64_t bias = 5;\n"
                     "int64_t f(int *w) { mram_read(table, w, 8); return bias + table[3]; }\n"
                     "__attribute__((noinline)) void g(__mram_ptr int *m, int *w) { mram_read(m, w, 8); }\n"
                     "void h(int *w) { g(table, w); }\n")
    assert sorted(c.mram_variables) == ["bias", "table"]
    assert "addrspace(255) global" not in c.llvm
    assert re.search(r"^@table = [^\n]*global \[64 x i32\] zeroinitializer, align (8|16)\b", c.llvm, re.M)
    assert re.search(r"^@bias = [^\n]*global i64 5, align 8\b", c.llvm, re.M)
    # a transfer of it: its host address as an MRAM pointer
    assert "ptr addrspace(255) addrspacecast (ptr @table to ptr addrspace(255))" in c.llvm
    # (also as a call's argument, after its attributes: no use of it left as an MRAM global)
    assert re.search(r"call [^\n]*@g\(ptr addrspace\(255\) noundef addrspacecast \(ptr @table", c.llvm)
    assert not re.search(r"ptr addrspace\(255\) (?:\w+ )*@(table|bias)\b", c.llvm)
    # direct accesses (through the variable and a constant offset of it): the checked DMA, at line 4
    loads = re.findall(rf"call i64 @{upmem_c.MRAM_LOAD}\(i64 %[-\w.]+, i64 (\d+), i64 (\d+)\)", c.llvm)
    assert sorted(loads) == [("4", str(upmem_c.SITE_BASE + 4)), ("8", str(upmem_c.SITE_BASE + 4))]
    # not WRAM's; their bytes' table, for the model's MRAM regions
    assert c.wram_variable_bytes == 0
    linked, _ = c.linked()
    assert re.search(rf"^@{c.mram_variables_table} = weak global \[4 x i64\] ", linked, re.M)
    assert "i64 ptrtoint (ptr @table to i64), i64 ptrtoint (ptr getelementptr ([64 x i32], ptr @table, i32 1) to i64)" \
        in linked



def test_direct_accesses_are_told_apart_from_those_of_its_own_variables_in_mram():
    """Only a load or store through a pointer reaches MRAM other DPUs may share."""
    own = compile_text("#include <mram.h>\n__mram int64_t bias = 5;\n__mram_noinit int64_t t[4];\n"
                       "int64_t f(int *w) { bias = bias + 1; t[2] = bias; return t[1]; }\n")
    assert "@__edsl_mram_store(" in own.llvm and not own.direct_mram
    through = compile_text("#include <mram.h>\n__mram int64_t bias = 5;\n"
                           "int64_t f(__mram_ptr int64_t *m, int k) { m[k] = bias; return 0; }\n")
    assert through.direct_mram
    indexed = compile_text("#include <mram.h>\n__mram_noinit int64_t t[4];\n"
                           "int64_t f(int k) { return t[k]; }\n")
    assert indexed.direct_mram           # (an address computed at run time: not told apart)


def test_the_reset_of_variables_in_mram_writes_zeros_as_zeros():
    """A kernel's program gives each DPU the variables' first values: zeros
    as a memset (an MRAM variable may take megabytes), others from a copy."""
    c = compile_text("#include <mram.h>\n__mram_noinit int table[1 << 20];\n__mram int64_t bias = 5;\n"
                     "int64_t f(int *w) { mram_read(table, w, 8); mram_write(w, &bias, 8); return bias; }\n")
    linked, names = c.linked(also=("g",))
    assert names == ("f", "g")
    reset = linked[linked.index(f"define weak void @{c.reset_function}()"):]
    assert "call void @llvm.memset.p0.i64(ptr @table, i8 0, i64 ptrtoint (ptr getelementptr ([1048576 x i32], " \
           "ptr null, i32 1) to i64), i1 false)" in reset
    assert "call void @llvm.memcpy.p0.p0.i64(ptr @bias, ptr @bias.edsl.first, " in reset
    assert "@table.edsl.first" not in linked            # (no 4 MiB copy of zeros)
    assert c.mram_variable_bytes == (4 << 20) + 8


def test_the_function_is_named_by_the_stub_or_extern_func_name():
    two = "void f(int *w) { w[0] = 1; }\nvoid g(int *w) { w[0] = 2; }\n"
    assert compile_text(two, "g").function.name == "g"
    with pytest.raises(CompileError, match=r"defines 2 non-static functions \(f, g\).*extern_func_name"):
        compile_text(two, "h")
    src = clang.Source(two, "/virtual/k.c")
    assert upmem_c.compile_c(src, 1, "f", "h").function.name == "f"


def test_dialect_c_over_a_source_string():
    @edsl.dialect(name="c", source="void twice(int *w, int n) { for (int k = 0; k < n; k++) w[k] *= 2; }\n")
    def twice():
        """Doubles w[:n]."""
    import numpy as np
    w = np.arange(10, dtype=np.int32)
    twice.run(w, 7)
    assert list(w) == [0, 2, 4, 6, 8, 10, 12, 7, 8, 9]
    assert twice.source.filename.endswith("twice.c")
    with pytest.raises(TypeError, match="takes no hint"):
        edsl.dialect(name="c", source="", hint="pipeline")


def test_race_notes_log_each_wram_access_at_its_line():
    """Loads, stores, atomics and block copies of WRAM each log their bytes
    (`with_race_notes`), at the line; accesses of MRAM are the runtime's to log."""
    c = compile_text("#include <defs.h>\n#include <mram.h>\n#include <stdint.h>\n"
                     "struct pair { int64_t a, b; };\n"
                     "void f(int *w, short *s, struct pair *p, struct pair *q, __mram_ptr int64_t *m, int n) {\n"
                     "  w[1] = w[0] + n;\n"                                  # line 6: a load, a store
                     "  __atomic_fetch_add(&w[2], 1, __ATOMIC_RELAXED);\n"   # line 7: an atomic
                     "  *q = *p;\n"                                          # line 8: a copy of 16 bytes
                     "  s[3] = (short)m[1];\n"                               # line 9: an MRAM load, a store
                     "}\n")
    text = upmem_c.with_race_notes(c.llvm, ("/virtual/k.c",))
    notes = re.findall(r"call void @edsl_dpu_race_note\(i64 (\d+), i64 %\S+, i64 (.+?), i64 (\d+)\)", text)
    kinds = {(int(k), size, int(site) - upmem_c.SITE_BASE) for k, size, site in notes}
    i32 = "ptrtoint (ptr getelementptr (i32, ptr null, i32 1) to i64)"
    i16 = "ptrtoint (ptr getelementptr (i16, ptr null, i32 1) to i64)"
    assert (1, i32, 6) in kinds and (2, i32, 6) in kinds
    assert any(k == 3 and line == 7 for k, _, line in kinds)
    copies = {(k, line) for k, size, line in kinds if line == 8}
    assert copies == {(1, 8), (2, 8)}
    assert (2, i16, 9) in kinds
    assert not any("addrspace(255)" in line for line in text.splitlines() if "%edsl.race" in line)
    assert text.count("declare void @edsl_dpu_race_note(i64, i64, i64, i64)") == 1


def test_a_whole_programs_variables_stay_visible_with_their_sizes():
    """A DPU program's variables are the host's to read and write by name
    (edsl.c_program): each made weak, so that its name survives the link and
    its value is never assumed; a static one too (the DPU's state), named as
    not the host's; nested arrays and structures sized as the host lays them out."""
    c = compile_text("#include <defs.h>\n#include <stdint.h>\n"
                     "__host struct { uint32_t n; uint64_t w; } ARGS;\n"
                     "__host uint64_t grid[NR_TASKLETS][3];\n"
                     "static uint32_t seen;\n"
                     "int main(void) { seen += ARGS.n; grid[me()][1] = ARGS.w + seen; return 0; }\n", "main")
    assert set(c.globals) == {"ARGS", "grid", "seen"}
    assert upmem_c.variable_sizes(c.llvm, c.globals) == {"ARGS": 16, "grid": 4 * 3 * 8, "seen": 4}
    text, static = upmem_c.with_visible_variables(c.llvm, c.globals)
    assert static == ("seen",)
    for name in c.globals:
        assert re.search(rf"^@{name} = weak (dso_local )?((local_)?unnamed_addr )?global ", text, re.M), name


def test_leading_types_of_nested_aggregates():
    from edsl.codegen.llvm_ir import leading_type
    assert leading_type("[4 x [8 x i64]] zeroinitializer, align 16") == "[4 x [8 x i64]]"
    assert leading_type("[2 x { i32, [3 x i8] }] x") == "[2 x { i32, [3 x i8] }]"
    assert leading_type("<{ i8, i32 }> <{ i8 1, i32 2 }>") == "<{ i8, i32 }>"
    assert leading_type("<4 x i32> %v") == "<4 x i32>"
    assert leading_type("ptr addrspace(255) %p") == "ptr addrspace(255)"
