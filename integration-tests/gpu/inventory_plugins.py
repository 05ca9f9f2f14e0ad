"""Prints the plugins list of a CRIU inventory.img, without protobuf libraries (the GPU host has none for CRIU).

inventory.img = 32-bit magic 0x58313116, then one entry: 32-bit little-endian length + inventory_entry message.
inventory_entry field 12 is plugins_entry, a message whose field 12 is `repeated string plugins`.
Output: "absent" when the field is missing (image from a criu that records no plugins), otherwise one line
"plugins: a,b" (empty after the colon when the list is empty). Exit 1 with a one-line reason on a bad file.

usage: python3 inventory_plugins.py IMAGES_DIR/inventory.img
       python3 inventory_plugins.py --drop IMAGES_DIR/inventory.img
         rewrites the file without the plugins field, as a criu older than 4.1 writes it (a "legacy" image)
"""
import struct
import sys

INVENTORY_MAGIC = 0x58313116
PLUGINS_ENTRY_FIELD = 12
PLUGINS_FIELD = 12


def varint(buf, pos):
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message; value is bytes for wire type 2."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")
        yield number, wire, value


def read_entry(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("too short")
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic != INVENTORY_MAGIC:
        raise ValueError(f"magic 0x{magic:08x} is not the inventory magic")
    (size,) = struct.unpack_from("<I", data, 4)
    entry = data[8:8 + size]
    if len(entry) != size:
        raise ValueError("truncated entry")
    return entry


def encode_varint(value):
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def drop_plugins(path):
    """Rewrites inventory.img without field 12, keeping every other field byte for byte."""
    entry = read_entry(path)
    kept = bytearray()
    pos = 0
    while pos < len(entry):
        start = pos
        key, pos = varint(entry, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = varint(entry, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            size, pos = varint(entry, pos)
            pos += size
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if number != PLUGINS_ENTRY_FIELD:
            kept += entry[start:pos]
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<II", INVENTORY_MAGIC, len(kept)) + bytes(kept))
    import os
    os.replace(path + ".tmp", path)


def plugins(path):
    entry = read_entry(path)
    found = None
    for number, wire, value in fields(entry):
        if number == PLUGINS_ENTRY_FIELD and wire == 2:
            found = found or []
            found += [v.decode() for n, w, v in fields(value) if n == PLUGINS_FIELD and w == 2]
    return found


def main():
    args = sys.argv[1:]
    drop = args[:1] == ["--drop"]
    if drop:
        args = args[1:]
    if len(args) != 1:
        print("usage: inventory_plugins.py [--drop] inventory.img", file=sys.stderr)
        return 2
    try:
        if drop:
            drop_plugins(args[0])
        names = plugins(args[0])
    except (OSError, ValueError) as e:
        print(f"inventory_plugins: {args[0]}: {e}", file=sys.stderr)
        return 1
    print("absent" if names is None else "plugins: " + ",".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
