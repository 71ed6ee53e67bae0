"""A small classic-BPF interpreter: runs the very seccomp program handed to bwrap on a
syscall of our choosing and says which action the kernel would take."""

from __future__ import annotations

import struct
import sys

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000


def errno_action(number: int) -> int:
    return SECCOMP_RET_ERRNO | number


def seccomp_data(nr: int, arch: int, args: tuple[int, ...] = ()) -> bytes:
    """`struct seccomp_data` in this machine's byte order."""
    full = (list(args) + [0] * 6)[:6]
    order = "<" if sys.byteorder == "little" else ">"
    return struct.pack(order + "iIQ6Q", nr, arch, 0, *(value & 0xFFFFFFFFFFFFFFFF for value in full))


def run_filter(program: bytes, data: bytes) -> int:
    """The action (SECCOMP_RET_*) the program returns for `data`. Raises on an unknown opcode."""
    instructions = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    order = "<" if sys.byteorder == "little" else ">"
    a = x = 0
    scratch = [0] * 16
    pc = 0
    while True:
        code, jt, jf, k = instructions[pc]
        pc += 1
        kind = code & 0x07
        if kind == 0x00:  # LD
            mode = code & 0xE0
            if mode == 0x20 and code & 0x18 == 0x00:
                a = struct.unpack_from(order + "I", data, k)[0]
            elif mode == 0x00:
                a = k
            elif mode == 0x60:
                a = scratch[k]
            else:
                raise ValueError(f"unsupported load {code:#x}")
        elif kind == 0x01:  # LDX
            x = k if code & 0xE0 == 0x00 else scratch[k]
        elif kind == 0x02:  # ST
            scratch[k] = a
        elif kind == 0x03:  # STX
            scratch[k] = x
        elif kind == 0x04:  # ALU
            operand = x if code & 0x08 else k
            op = code & 0xF0
            results = {
                0x00: a + operand,
                0x10: a - operand,
                0x40: a | operand,
                0x50: a & operand,
                0x60: a << operand,
                0x70: a >> operand,
                0xA0: a ^ operand,
            }
            if op not in results:
                raise ValueError(f"unsupported ALU op {code:#x}")
            a = results[op] & 0xFFFFFFFF
        elif kind == 0x05:  # JMP
            operand = x if code & 0x08 else k
            op = code & 0xF0
            if op == 0x00:
                pc += k
                continue
            taken = {0x10: a == operand, 0x20: a > operand, 0x30: a >= operand, 0x40: bool(a & operand)}
            if op not in taken:
                raise ValueError(f"unsupported jump {code:#x}")
            pc += jt if taken[op] else jf
        elif kind == 0x06:  # RET
            return a if code & 0x18 == 0x10 else k
        elif kind == 0x07:  # MISC
            if code & 0xF8 == 0x00:
                x = a
            else:
                a = x
        else:  # pragma: no cover - every class is handled above
            raise ValueError(f"unsupported instruction {code:#x}")
