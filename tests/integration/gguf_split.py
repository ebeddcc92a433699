"""Cuts a GGUF file into the parts of a split model, as llama.cpp's gguf-split
lays them out: the first part keeps all metadata; every part gets split.no
(uint16, 0-based) and split.count (uint16), the first split.tensors.count
(int32); tensors keep their order, data aligned to 32 bytes. For the pull
tests (stdlib only); the C++ tests have their own (tests/formats/gguf_split_writer.h).
"""
import struct

ALIGN = 32
SCALAR = {0: 1, 1: 1, 7: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 10: 8, 11: 8, 12: 8}
TYPE_SIZES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34), 30: (1, 2)}  # ggml type: (block, bytes)


def _value_end(b, at, vtype):
    if vtype in SCALAR:
        return at + SCALAR[vtype]
    if vtype == 8:
        return at + 8 + struct.unpack_from("<Q", b, at)[0]
    if vtype == 9:
        elem, n = struct.unpack_from("<IQ", b, at)
        at += 12
        for _ in range(n):
            at = _value_end(b, at, elem)
        return at
    raise ValueError("unknown GGUF value type %d" % vtype)


def _pad(n):
    return b"\0" * (-n % ALIGN)


def split_gguf(b, per_part):
    """The parts' bytes; per_part: tensors in each part, in file order."""
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", b, 0)
    assert magic == b"GGUF" and sum(per_part) == n_tensors
    at = 24
    for _ in range(n_kv):
        at += 8 + struct.unpack_from("<Q", b, at)[0]
        at = _value_end(b, at + 4, struct.unpack_from("<I", b, at)[0])
    metadata = b[24:at]
    infos = []
    for _ in range(n_tensors):
        start = at
        at += 8 + struct.unpack_from("<Q", b, at)[0]
        n_dims = struct.unpack_from("<I", b, at)[0]
        dims = struct.unpack_from("<%dQ" % n_dims, b, at + 4)
        gtype, offset = struct.unpack_from("<IQ", b, at + 4 + 8 * n_dims)
        at += 4 + 8 * n_dims + 12
        count = 1
        for d in dims:
            count *= d
        block, size = TYPE_SIZES[gtype]
        infos.append((b[start:at - 8], offset, count // block * size))
    data_start = at + (-at % ALIGN)

    def kv(key, vtype, fmt, value):
        k = key.encode()
        return struct.pack("<Q", len(k)) + k + struct.pack("<I" + fmt, vtype, value)

    parts, first = [], 0
    for no, n in enumerate(per_part):
        keys = kv("split.no", 2, "H", no) + kv("split.count", 2, "H", len(per_part))
        if no == 0:
            keys = metadata + keys + kv("split.tensors.count", 5, "i", n_tensors)
        head = struct.pack("<4sIQQ", b"GGUF", version, n, (n_kv + 3) if no == 0 else 2) + keys
        data = b""
        for info, offset, size in infos[first:first + n]:
            data += _pad(len(data))
            head += info + struct.pack("<Q", len(data))
            data += b[data_start + offset:data_start + offset + size]
        first += n
        parts.append(head + _pad(len(head)) + data)
    return parts
