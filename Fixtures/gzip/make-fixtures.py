#!/usr/bin/env python3
"""Writes the crafted gzip fixtures of this folder (the gzip CLI cannot write FEXTRA,
FCOMMENT or FHCRC). Deterministic: run it again and the files are byte-identical.
Usage: python3 make-fixtures.py   (from this folder)"""
import struct, zlib

PAYLOAD = b"BlobStream gzip fixture: a header with FEXTRA, FNAME, FCOMMENT and FHCRC.\n" * 20

def member(payload, header_crc_xor=0):
    flags = 0x04 | 0x08 | 0x10 | 0x02          # FEXTRA | FNAME | FCOMMENT | FHCRC
    header = b"\x1f\x8b\x08" + bytes([flags]) + struct.pack("<I", 1700000000) + b"\x00\x03"
    extra = b"BS" + struct.pack("<H", 4) + b"test"  # one subfield: id 'BS', 4 bytes
    header += struct.pack("<H", len(extra)) + extra
    header += b"payload.txt\x00"
    header += b"a comment, latin-1 only\x00"
    header += struct.pack("<H", (zlib.crc32(header) & 0xFFFF) ^ header_crc_xor)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    trailer = struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)
    return header + body + trailer

open("header-fields.gz", "wb").write(member(PAYLOAD))
open("bad-header-crc.gz", "wb").write(member(PAYLOAD, header_crc_xor=0x0001))
