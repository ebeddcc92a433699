#!/usr/bin/env python3
"""Independent (stdlib-only) dequantization of a few weight rows from the
reference fixtures, for tests/backend/quant_fixture_test.cpp.

Written from the format descriptions, not from llmhost's C++:
  * GGUF block layouts as ggml defines them (ggml-common.h / ggml-quants.c;
    gguf-py's quants.py dequantizes the same way).
  * MLX affine quantization: values packed as a little-endian bit stream
    (first value in the lowest bits), w = scale * q + bias in float32.

Every value is computed in float64 from exactly representable pieces and
rounded to float32 once at the end; for these formats every intermediate
product of the float32 computation is exact, so the result equals the
float32 computation bit for bit.

Writes quant_expected.json beside this script: for each case the raw bytes
of the rows (hex), their location in the fixture, and the expected floats.
Usage: python3 gen_quant_expected.py [path/to/shared]
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(v):
    """Rounds a float64 to the nearest float32 (ties to even)."""
    return struct.unpack('<f', struct.pack('<f', v))[0]


def f16(b, off):
    return struct.unpack_from('<e', b, off)[0]


def bf16(b, off):
    (h,) = struct.unpack_from('<H', b, off)
    return struct.unpack('<f', struct.pack('<I', h << 16))[0]


# --- GGUF -----------------------------------------------------------------

GGML = {  # type id: (name, elements per block, bytes per block)
    0: ('F32', 1, 4), 1: ('F16', 1, 2), 2: ('Q4_0', 32, 18), 3: ('Q4_1', 32, 20),
    6: ('Q5_0', 32, 22), 7: ('Q5_1', 32, 24), 8: ('Q8_0', 32, 34),
    12: ('Q4_K', 256, 144), 13: ('Q5_K', 256, 176), 14: ('Q6_K', 256, 210),
}


def read_gguf(path):
    data = open(path, 'rb').read()
    pos = [0]

    def take(fmt):
        v = struct.unpack_from('<' + fmt, data, pos[0])
        pos[0] += struct.calcsize('<' + fmt)
        return v

    def string():
        (n,) = take('Q')
        s = data[pos[0]:pos[0] + n].decode('utf-8')
        pos[0] += n
        return s

    scalar = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q',
              12: 'd'}

    def value(t):
        if t in scalar:
            return take(scalar[t])[0]
        if t == 8:
            return string()
        if t == 9:
            (et,) = take('I')
            (n,) = take('Q')
            return [value(et) for _ in range(n)]
        raise ValueError('bad metadata type %d' % t)

    assert data[:4] == b'GGUF', path
    pos[0] = 4
    (version,) = take('I')
    n_tensors, n_kv = take('QQ')
    kv = {}
    for _ in range(n_kv):
        k = string()
        (t,) = take('I')
        kv[k] = value(t)
    tensors = {}
    for _ in range(n_tensors):
        name = string()
        (nd,) = take('I')
        dims = take('Q' * nd)
        (t,) = take('I')
        (off,) = take('Q')
        tensors[name] = (dims, t, off)
    align = kv.get('general.alignment', 32)
    base = (pos[0] + align - 1) // align * align
    return data, base, tensors


def scale_min_k4(j, s):
    """The 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes."""
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


def deq_block(t, b):
    """Dequantizes one block (bytes b) of ggml type t to a list of floats."""
    name = GGML[t][0]
    if name == 'Q8_0':
        d = f16(b, 0)
        return [f32(d * struct.unpack_from('<b', b, 2 + i)[0]) for i in range(32)]
    if name in ('Q4_0', 'Q4_1'):
        d = f16(b, 0)
        m = f16(b, 2) if name == 'Q4_1' else 0.0
        qs = b[4:20] if name == 'Q4_1' else b[2:18]
        lo = [q & 15 for q in qs]
        hi = [q >> 4 for q in qs]
        if name == 'Q4_0':
            return [f32((q - 8) * d) for q in lo + hi]
        return [f32(q * d + m) for q in lo + hi]
    if name in ('Q5_0', 'Q5_1'):
        d = f16(b, 0)
        off = 4 if name == 'Q5_1' else 2
        m = f16(b, 2) if name == 'Q5_1' else 0.0
        (qh,) = struct.unpack_from('<I', b, off)
        qs = b[off + 4:off + 20]
        out = []
        for half in range(2):
            for j in range(16):
                q = (qs[j] >> (4 * half)) & 15
                q |= ((qh >> (j + 16 * half)) & 1) << 4
                out.append(f32((q - 16) * d) if name == 'Q5_0' else f32(q * d + m))
        return out
    if name in ('Q4_K', 'Q5_K'):
        d, dmin = f16(b, 0), f16(b, 2)
        sc = b[4:16]
        qh = b[16:48] if name == 'Q5_K' else None
        qs = b[48:176] if name == 'Q5_K' else b[16:144]
        out = []
        for sub in range(8):  # 32 values each; pairs share 32 bytes of qs
            s, mn = scale_min_k4(sub, sc)
            chunk = qs[32 * (sub // 2):32 * (sub // 2) + 32]
            for l in range(32):
                q = (chunk[l] >> (4 * (sub % 2))) & 15
                if qh is not None:
                    q += 16 * ((qh[l] >> sub) & 1)
                out.append(f32(f32(d * s) * q - f32(dmin * mn)))
        return out
    if name == 'Q6_K':
        ql, qh = b[0:128], b[128:192]
        scales = struct.unpack_from('<16b', b, 192)
        d = f16(b, 208)
        out = [0.0] * 256
        for i in range(256):
            half, r = divmod(i, 128)  # 128 values per half: ql 64 bytes, qh 32 bytes
            quarter, l = divmod(r, 32)
            low = ql[64 * half + l + 32 * (quarter & 1)]
            low = (low >> 4) if quarter >= 2 else (low & 15)
            high = (qh[32 * half + l] >> (2 * quarter)) & 3
            q = (low | (high << 4)) - 32
            s = scales[8 * half + l // 16 + 2 * quarter]
            out[i] = f32(f32(d * s) * q)
        return out
    raise ValueError(name)


def gguf_rows(shared, file, tensor, rows):
    data, base, tensors = read_gguf(os.path.join(shared, 'reference/models/llama-tiny-gguf', file))
    dims, t, off = tensors[tensor]
    cols = dims[0]
    _, bs, ts = GGML[t]
    row_bytes = cols // bs * ts
    cases = []
    for r in rows:
        start = base + off + r * row_bytes
        raw = data[start:start + row_bytes]
        vals = []
        for k in range(cols // bs):
            vals += deq_block(t, raw[k * ts:(k + 1) * ts])
        cases.append({'kind': 'gguf', 'file': file, 'tensor': tensor, 'ggml_type': t,
                      'cols': cols, 'row': r, 'raw_hex': raw.hex(), 'values': vals})
    return cases


def gguf_full(shared, file, tensor):
    """All rows of a tensor (for the sanity comparison with the F32 file)."""
    data, base, tensors = read_gguf(os.path.join(shared, 'reference/models/llama-tiny-gguf', file))
    dims, t, off = tensors[tensor]
    n = dims[0] * dims[1]
    if t == 0:
        return list(struct.unpack_from('<%df' % n, data, base + off))
    _, bs, ts = GGML[t]
    out = []
    for k in range(n // bs):
        out += deq_block(t, data[base + off + k * ts:base + off + (k + 1) * ts])
    return out


# --- MLX ------------------------------------------------------------------

def read_safetensors(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack_from('<Q', data, 0)
    header = json.loads(data[8:8 + n])
    return data, 8 + n, header


def mlx_rows(shared, model, prefix, bits, group, rows):
    data, base, header = read_safetensors(os.path.join(shared, 'reference/models', model,
                                                       'model.safetensors'))
    w, s, b = (header[prefix + '.' + k] for k in ('weight', 'scales', 'biases'))
    assert w['dtype'] == 'U32' and s['dtype'] == 'BF16' and b['dtype'] == 'BF16'
    words = w['shape'][1]
    cols = words * 32 // bits
    groups = cols // group
    cases = []
    for r in rows:
        wb = data[base + w['data_offsets'][0] + 4 * words * r:][:4 * words]
        sb = data[base + s['data_offsets'][0] + 2 * groups * r:][:2 * groups]
        bb = data[base + b['data_offsets'][0] + 2 * groups * r:][:2 * groups]
        bitstream = int.from_bytes(wb, 'little')  # value i at bits [i*bits, (i+1)*bits)
        vals = []
        for i in range(cols):
            q = (bitstream >> (i * bits)) & ((1 << bits) - 1)
            scale, bias = bf16(sb, 2 * (i // group)), bf16(bb, 2 * (i // group))
            vals.append(f32(f32(scale * q) + bias))
        cases.append({'kind': 'mlx', 'file': model, 'tensor': prefix + '.weight', 'bits': bits,
                      'group_size': group, 'cols': cols, 'row': r, 'raw_hex': wb.hex(),
                      'scales_hex': sb.hex(), 'biases_hex': bb.hex(), 'values': vals})
    return cases


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '../../../../shared')
    cases = []
    for typ in ('q8_0', 'q4_0', 'q4_k', 'q6_k'):
        cases += gguf_rows(shared, 'llama-tiny-%s.gguf' % typ, 'blk.0.ffn_down.weight', [0, 201])
    cases += mlx_rows(shared, 'llama3-tiny-mlx4', 'model.layers.0.mlp.down_proj', 4, 32, [0, 37])
    cases += mlx_rows(shared, 'qwen3-tiny-mlx8', 'model.layers.0.mlp.down_proj', 8, 64, [0, 50])

    # Sanity: each quantized file dequantizes close to the F32 file's weights
    # (a wrong layout would give errors of the order of the weights).
    ref = gguf_full(shared, 'llama-tiny-f32.gguf', 'blk.0.ffn_down.weight')
    amax = max(abs(v) for v in ref)
    for typ in ('q8_0', 'q4_0', 'q4_k', 'q6_k'):
        got = gguf_full(shared, 'llama-tiny-%s.gguf' % typ, 'blk.0.ffn_down.weight')
        err = max(abs(a - b) for a, b in zip(got, ref))
        print('%-5s max |deq - f32| = %.3g (max |w| %.3g)' % (typ, err, amax))
        assert err < 0.15 * amax, typ

    out = os.path.join(HERE, 'quant_expected.json')
    with open(out, 'w') as f:
        json.dump({'generator': 'tests/data/backend/gen_quant_expected.py', 'cases': cases}, f,
                  separators=(',', ':'))
        f.write('\n')
    print('wrote %s: %d cases' % (out, len(cases)))


if __name__ == '__main__':
    main()
