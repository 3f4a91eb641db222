"""Whole DPU programs in UPMEM C on the DPU model, behind the SDK stand-ins
in model mode (`edsl sdk FOLDER --model`), as two commands:

    python -m edsl.sdk_model build ARGS...           (the stand-ins' dpu-upmem-dpurte-clang)
    python -m edsl.sdk_model serve REQUEST_FD REPLY_FD   (started by dpu_alloc)

`build` compiles the DPU program's C source for the model
(edsl.c_program.CProgram: a compile error is the compiler's, at its line)
and writes, as the program file, what the model needs to compile it again
when `dpu_load` loads it: the source, its macros and include folders, its
tasklets (NR_TASKLETS).

`serve` is the model the host library (`export/sdk/dpu_sim_model.c`, which
states the protocol) asks to load a DPU's program, to name, read and write
the program's variables on a DPU, to launch a DPU, and for a DPU's printf
output. Each DPU keeps its own variables (`CProgram.loaded`); its MRAM is
the host's memory file of it, which a launch maps at `WINDOW`, below 4 GiB,
so that a program may keep MRAM addresses in 32 bits as PrIM's do. DPUs
run one at a time, each checked as C functions on the model are (the check
of races between tasklets where EDSL_RACE_CHECK=1 asks for it), its
tasklets taking turns on one thread as a DPU's do; a fault or race is the
launch's error, its message naming the `.c` line. A launch that stops making
progress for EDSL_SIM_TURN_SECONDS ends the model with an error (`_Watch`),
as the stand-ins end.
"""
from __future__ import annotations

import ctypes
import json
import mmap
import os
import re
import struct
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

from .base.errors import EdslError
from .export.counting_build import split_command
from .export.project import SDK_DIR
from .target.dpu import COUNT_FINISHED_SHIFT, MRAM_BYTES, Ctx, Dpu

FORMAT = "edsl DPU program for the model"
# Flags that change nothing the model runs: optimization, warnings, debug
# information, the language standard, code generation and target options.
_IGNORED = ("-O", "-W", "-g", "-std=", "-f", "-m", "-pedantic", "-c")


def program_of(args: list[str], cwd: str) -> tuple[str, dict]:
    """(the output file, the program file's fields) of the DPU compiler's command line."""
    out, sources, flags = split_command(args)
    if len(sources) != 1:
        raise ValueError(f"the DPU model runs a DPU program of one C source; {len(sources)} given")
    defines, include_dirs = {}, []
    flags = iter(flags)
    for flag in flags:
        if flag in ("-D", "-I"):
            flag += next(flags, "")
        if flag.startswith("-D"):
            name, _, value = flag[2:].partition("=")
            defines[name] = value if "=" in flag else None
        elif flag.startswith("-I"):
            include_dirs.append(os.path.join(cwd, flag[2:]))
        elif not flag.startswith(_IGNORED):
            raise ValueError(f"the DPU model does not take the compiler flag {flag!r}")
    tasklets = int(defines.pop("NR_TASKLETS", None) or 1)
    return out, {"format": FORMAT, "source": os.path.join(cwd, sources[0]), "defines": defines,
                 "include_dirs": include_dirs, "tasklets": tasklets}


def read_program(path: str | os.PathLike) -> dict:
    """The fields of a program file `build` wrote (ValueError: not one)."""
    try:
        fields = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a DPU program built for the model (edsl sdk --model): {err}") from None
    if not isinstance(fields, dict) or fields.get("format") != FORMAT:
        raise ValueError(f"{path} is not a DPU program built for the model (edsl sdk --model)")
    return fields


def load_program(fields: dict):
    """The CProgram of a program file's fields (compiled; checked for races
    between tasklets where EDSL_RACE_CHECK asks, as launches are)."""
    from .c_program import CProgram
    return CProgram(fields["source"], fields["tasklets"], fields["defines"], tuple(fields["include_dirs"]))


def build(args: list[str]) -> int:
    """Compile the DPU program `args` names for the model and write its program file."""
    try:
        out, fields = program_of(args, os.getcwd())
        load_program(fields)
    except (ValueError, EdslError) as err:
        print(f"dpu-upmem-dpurte-clang (edsl SDK stand-ins, DPU model): {err}", file=sys.stderr)
        return 1
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(fields, indent=1) + "\n")
    return 0


# Where a running DPU's MRAM is mapped in this process: any address below
# 4 GiB that it leaves free (reserved before anything else may take it).
WINDOW = 0x10000000
_MAP_FIXED, _MAP_FIXED_NOREPLACE = 0x10, 0x100000      # (Linux's; Python's mmap module lacks them)
_OPS = {1: "load", 2: "symbol", 3: "write", 4: "read", 5: "launch", 6: "log"}
# A launch that makes no transfer and no wait, and ends none of its tasklets,
# for this many seconds (EDSL_SIM_TURN_SECONDS, as the stand-ins read it) has a
# tasklet waiting for another in a loop, which on one host thread never lets
# the other run: the model ends, saying so, rather than hang its host.
TURN_SECONDS = 60


class _Watch:
    """Ends the process when a running launch stops making progress (`TURN_SECONDS`)."""

    def __init__(self, dpu: int):
        self.dpu, self.done = dpu, threading.Event()
        env = os.environ.get("EDSL_SIM_TURN_SECONDS", "")
        self.limit = int(env) if env.isdigit() and int(env) > 0 else TURN_SECONDS

    def start(self, launch) -> None:
        threading.Thread(target=self._watch, args=(launch,), daemon=True).start()

    @staticmethod
    def _progress(launch) -> tuple:
        return (int((launch.ctx[..., Ctx.READS] + launch.ctx[..., Ctx.WRITES]).sum()),
                int(launch.state[:, Dpu.COUNT].sum()), int(launch.state[:, Dpu.GENERATION].sum()))

    def _watch(self, launch) -> None:
        seen, still = self._progress(launch), 0
        while not self.done.wait(1.0):
            if (launch.state[:, Dpu.COUNT] >> COUNT_FINISHED_SHIFT >= launch.state[:, Dpu.TASKLETS]).all():
                return                      # (its tasklets have ended: the check of races may take a while)
            now = self._progress(launch)
            still = still + 1 if now == seen else 0
            seen = now
            if still >= self.limit:
                os.write(2, f"[dpu sim] DPU {self.dpu}: no transfer, wait or end of a tasklet for {self.limit} s: "
                            f"the DPU model runs a DPU's tasklets in turns on one host thread, switching only "
                            f"there, so a tasklet that waits for another in a loop (on a WRAM variable) never "
                            f"lets it run; this program cannot run on it\n".encode())
                os._exit(1)


def _dpu_errors() -> dict:
    """The host library's error codes by name (`dpu_error_t` of sdk/dpu.h, numbered in order)."""
    body = re.search(r"typedef enum dpu_error_t \{(.*?)\}", (SDK_DIR / "dpu.h").read_text(), re.S)[1]
    return {name: k for k, name in enumerate(re.findall(r"\b(DPU_\w+)", body))}


ERR = _dpu_errors()


@dataclass
class _Dpu:
    program: object          # its CProgram
    variables: dict          # name -> bytearray: its WRAM (and MRAM) variables
    log: bytes = b""         # its printf output of its last launch


class Server:
    """The DPUs of one `dpu_alloc`, by index (see the module docstring)."""

    def __init__(self):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.mmap.restype = ctypes.c_void_p
        self._libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_long]
        self._libc.fflush.argtypes = [ctypes.c_void_p]
        at = self._libc.mmap(WINDOW, MRAM_BYTES, 0,          # (PROT_NONE)
                             mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED_NOREPLACE, -1, 0)
        if at != WINDOW:
            raise OSError(f"cannot reserve the {MRAM_BYTES >> 20} MiB at {WINDOW:#x} where a DPU's MRAM runs")
        self._programs: dict[tuple, object] = {}
        self.dpus: dict[int, _Dpu] = {}

    def _program(self, path: str):
        fields = read_program(path)
        stat = os.stat(fields["source"])
        key = (path, os.stat(path).st_mtime_ns, stat.st_mtime_ns)
        if key not in self._programs:
            self._programs[key] = load_program(fields)
        return self._programs[key]

    def load(self, dpu: int, payload: bytes, *_) -> tuple:
        try:
            program = self._program(payload.decode())
        except (OSError, ValueError, EdslError) as err:
            return ERR["DPU_ERR_ELF_INVALID_FILE"], 0, 0, str(err).encode()
        self.dpus[dpu] = _Dpu(program, program.loaded())
        return ERR["DPU_OK"], 0, 0, b""

    def _variable(self, dpu: int, name: str):
        one = self.dpus.get(dpu)
        if one is None:
            return None, ERR["DPU_ERR_NO_PROGRAM_LOADED"]
        if one.program.symbol(name) is None:
            return None, ERR["DPU_ERR_UNKNOWN_SYMBOL"]
        return one.variables[name], ERR["DPU_OK"]

    def symbol(self, dpu: int, payload: bytes, *_) -> tuple:
        value, err = self._variable(dpu, payload.decode())
        if value is None:
            return err, 0, 0, b""
        size, in_mram = self.dpus[dpu].program.symbol(payload.decode())
        return ERR["DPU_OK"], size, int(in_mram), b""

    def write(self, dpu: int, payload: bytes, offset: int, length: int, name_bytes: int) -> tuple:
        value, err = self._variable(dpu, payload[:name_bytes].decode())
        if value is not None:
            if offset + length > len(value):
                return ERR["DPU_ERR_INVALID_SYMBOL_ACCESS"], 0, 0, b""
            value[offset:offset + length] = payload[name_bytes:]
        return err, 0, 0, b""

    def read(self, dpu: int, payload: bytes, offset: int, length: int, _) -> tuple:
        value, err = self._variable(dpu, payload.decode())
        if value is None:
            return err, 0, 0, b""
        if offset + length > len(value):
            return ERR["DPU_ERR_INVALID_SYMBOL_ACCESS"], 0, 0, b""
        return err, 0, 0, bytes(value[offset:offset + length])

    def launch(self, dpu: int, _, mram_file: int, heap_offset: int, __) -> tuple:
        one = self.dpus.get(dpu)
        if one is None:
            return ERR["DPU_ERR_NO_PROGRAM_LOADED"], 0, 0, b""
        at = self._libc.mmap(WINDOW, MRAM_BYTES, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | _MAP_FIXED,
                             mram_file, 0)
        if at != WINDOW:
            return ERR["DPU_ERR_SYSTEM"], 0, 0, f"cannot map DPU {dpu}'s MRAM: {os.strerror(ctypes.get_errno())}".encode()
        with tempfile.TemporaryFile() as out:
            self._libc.fflush(None)
            saved = os.dup(1)
            os.dup2(out.fileno(), 1)          # (the DPU's printf: its log, which dpu_log_read prints)
            watch = _Watch(dpu)
            try:
                one.program.launch(one.variables, WINDOW, heap_offset, on_launch=watch.start)
                err, message = ERR["DPU_OK"], b""
            except EdslError as error:
                err, message = ERR["DPU_ERR_DPU_FAULT"], f"fault: {error}".encode()
            finally:
                watch.done.set()
                self._libc.fflush(None)
                os.dup2(saved, 1)
                os.close(saved)
                out.seek(0)
                one.log = out.read()
        return err, 0, 0, message

    def log(self, dpu: int, *_) -> tuple:
        one = self.dpus.get(dpu)
        if one is None:
            return ERR["DPU_ERR_NO_PROGRAM_LOADED"], 0, 0, b""
        return ERR["DPU_OK"], 0, 0, one.log


def _read(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def serve(requests: int, replies: int) -> None:
    """Answer the host library's requests until it closes their pipe."""
    server = Server()
    while (head := _read(requests, 48)) is not None:
        op, dpu, a, b, c, n = struct.unpack("<6q", head)
        payload = _read(requests, n) if n else b""
        try:
            status, value, value2, data = getattr(server, _OPS[op])(dpu, payload, a, b, c)
        except Exception:               # noqa: BLE001 - the model's own failure, told to the host
            status, value, value2, data = (ERR["DPU_ERR_INTERNAL"], 0, 0,
                                           f"the DPU model failed: {traceback.format_exc()}".encode())
        os.write(replies, struct.pack("<4q", status, value, value2, len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(replies, view):]


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        return build(argv[1:])
    if argv[:1] == ["serve"] and len(argv) == 3:
        serve(int(argv[1]), int(argv[2]))
        return 0
    print("usage: python -m edsl.sdk_model build COMPILER-ARGS... | serve REQUEST_FD REPLY_FD", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
