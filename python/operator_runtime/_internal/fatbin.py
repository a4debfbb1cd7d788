"""Lists the device code in a shared library's .nv_fatbin section, one
"ELF sm_XY" or "PTX compute_XY" line per image, without cuobjdump or objcopy.

Used by `python -m operator_runtime info` and by .ci/run (where the CUDA
toolkit ships no cuobjdump): python -m operator_runtime._internal.fatbin LIB.
It reads the section through the ELF64 section headers, then only the
container and entry headers of the fatbin format (magic 0xBA55ED50; each
entry: u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size, ...,
u32 arch at byte 28); payloads, compressed or not, are skipped.
Exit status: 0 with a listing, 1 if the library has no fatbin section, 2 if
the section cannot be read.
"""

import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "PTX", 2: "ELF"}


def fatbin_section(library) -> bytes:
    """The bytes of the .nv_fatbin section of an ELF64 little-endian file (b"" if none)."""
    with open(library, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{library} is not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = sections[shstrndx][4]
    for name, _, _, _, offset, size in sections:
        end = data.index(b"\0", names_offset + name)
        if data[names_offset + name:end] == b".nv_fatbin":
            return data[offset:offset + size]
    return b""


def cuda_targets(library) -> list[str]:
    """["ELF sm_90", "PTX compute_90", ...] in the library, sorted, without repeats."""
    return sorted({f"{kind} {'sm' if kind == 'ELF' else 'compute'}_{arch}"
                   for kind, arch in images(fatbin_section(library))})


def images(data: bytes):
    offset = data.find(MAGIC)
    while offset >= 0 and offset + 16 <= len(data):
        _, _, header_size, size = struct.unpack_from("<IHHQ", data, offset)
        entry, end = offset + header_size, offset + header_size + size
        if header_size < 16 or end > len(data):
            raise ValueError(f"bad fatbin header at byte {offset}")
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            if entry_header < 32:
                raise ValueError(f"bad fatbin entry at byte {entry}")
            yield KINDS.get(kind, f"kind{kind}"), arch
            entry += entry_header + payload
        offset = data.find(MAGIC, end)


def main() -> int:
    try:
        data = fatbin_section(sys.argv[1])
    except (OSError, ValueError, struct.error) as error:
        print(f"cannot read {sys.argv[1]}: {error}", file=sys.stderr)
        return 2
    if not data:
        print("no .nv_fatbin section", file=sys.stderr)
        return 1
    try:
        found = list(images(data))
    except (ValueError, struct.error) as error:
        print(f"cannot read the fatbin: {error}", file=sys.stderr)
        return 2
    for kind, arch in found:
        print(f"{kind} {'sm' if kind == 'ELF' else 'compute'}_{arch}")
    return 0 if found else 2


if __name__ == "__main__":
    sys.exit(main())
