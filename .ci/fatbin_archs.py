"""Lists the device code in a shared library's .nv_fatbin section, one
"ELF sm_XY" or "PTX compute_XY" line per image, without cuobjdump.

Used by .ci/run where the CUDA toolkit ships no cuobjdump. It reads only the
container and entry headers of the fatbin format (magic 0xBA55ED50; each
entry: u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size, ...,
u32 arch at byte 28); payloads, compressed or not, are skipped.
Exit status: 0 with a listing, 1 if the library has no fatbin section, 2 if
the section cannot be read.
"""

import struct
import subprocess
import sys
import tempfile
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "PTX", 2: "ELF"}


def fatbin_section(library: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        blob = Path(tmp) / "fatbin"
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", library, str(blob)], check=True)
        return blob.read_bytes() if blob.exists() else b""


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
    data = fatbin_section(sys.argv[1])
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
