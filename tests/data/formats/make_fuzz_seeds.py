#!/usr/bin/env python3
"""Writes the tiny seed inputs of fuzz/corpus/{gguf_fuzz,safetensors_fuzz}.

Run from the repository root: python3 tests/data/formats/make_fuzz_seeds.py
Standard library only; every seed is a valid file of a few hundred bytes.
"""
import json
import os
import struct


def gguf_str(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def gguf(version, kvs, tensors, alignment=32):
    """kvs: list of (key, encoded type+value bytes); tensors: (name, dims, type, nbytes)."""
    out = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs))
    for k, v in kvs:
        out += gguf_str(k) + v
    offset = 0
    infos = b''
    for name, dims, ttype, nbytes in tensors:
        infos += gguf_str(name) + struct.pack('<I', len(dims))
        infos += b''.join(struct.pack('<Q', d) for d in dims)
        infos += struct.pack('<IQ', ttype, offset)
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += infos
    out += b'\0' * ((-len(out)) % alignment)
    for i, (_, _, _, nbytes) in enumerate(tensors):
        out += bytes((i * 7 + j) % 251 for j in range(nbytes))
        out += b'\0' * ((-nbytes) % alignment)
    return out


def kv_u32(v): return struct.pack('<II', 4, v)
def kv_f32(v): return struct.pack('<If', 6, v)
def kv_bool(v): return struct.pack('<IB', 7, v)
def kv_string(s): return struct.pack('<I', 8) + gguf_str(s)
def kv_str_array(a): return struct.pack('<IIQ', 9, 8, len(a)) + b''.join(gguf_str(s) for s in a)
def kv_i8_array(a): return struct.pack('<IIQ', 9, 1, len(a)) + struct.pack('<%db' % len(a), *a)


def kv_nested():  # [[1, 2], [3]] as arrays of uint16
    return (struct.pack('<IIQ', 9, 9, 2) + struct.pack('<IQHH', 2, 2, 1, 2) +
            struct.pack('<IQH', 2, 1, 3))


def safetensors(tensors, metadata=None):
    header = {}
    if metadata:
        header['__metadata__'] = metadata
    data = b''
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': shape,
                        'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((-len(h)) % 8)
    return struct.pack('<Q', len(h)) + h + data


def main():
    g = 'fuzz/corpus/gguf_fuzz'
    s = 'fuzz/corpus/safetensors_fuzz'
    os.makedirs(g, exist_ok=True)
    os.makedirs(s, exist_ok=True)
    kvs = [('general.architecture', kv_string('llama')), ('llama.block_count', kv_u32(2)),
           ('llama.rope.freq_base', kv_f32(10000.0)), ('tokenizer.ggml.add_bos_token', kv_bool(1)),
           ('tokenizer.ggml.tokens', kv_str_array(['<s>', 'a', 'b'])),
           ('tokenizer.ggml.token_type', kv_i8_array([3, 1, 1])), ('nested', kv_nested())]
    tensors = [('w', [4, 2], 0, 32), ('q', [32], 8, 34)]
    seeds = {
        'v3_tensors.gguf': gguf(3, kvs, tensors),
        'v2_metadata_only.gguf': gguf(2, kvs[:3], []),
        'align64.gguf': gguf(3, [('general.alignment', kv_u32(64))], [('t', [256], 12, 144)], 64),
    }
    for name, data in seeds.items():
        open(os.path.join(g, name), 'wb').write(data)
    seeds = {
        'three_dtypes.safetensors': safetensors(
            [('a', 'F32', [2, 2], bytes(range(16))), ('b', 'BF16', [3], b'\x01\x02' * 3),
             ('c', 'U8', [5], b'hello')], {'format': 'pt'}),
        'empty.safetensors': safetensors([]),
        'zero_sized.safetensors': safetensors([('z', 'I64', [0, 4], b''),
                                               ('s', 'F64', [], b'\0' * 8)]),
    }
    for name, data in seeds.items():
        open(os.path.join(s, name), 'wb').write(data)


if __name__ == '__main__':
    main()
