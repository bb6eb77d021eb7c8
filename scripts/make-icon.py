# Draws media/icon.png (128x128): a theta over a rising curve. Pure stdlib.
import math, struct, zlib

W = H = 128
def px(x, y):
    cx, cy = 64, 60
    # background: rounded square, deep blue -> teal gradient
    r = 22
    dx = max(abs(x - 63.5) - (63.5 - r), 0); dy = max(abs(y - 63.5) - (63.5 - r), 0)
    if dx * dx + dy * dy > r * r:
        return (0, 0, 0, 0)
    t = y / H
    bg = (int(20 + 10 * t), int(40 + 90 * t), int(110 + 40 * t), 255)
    # theta: ellipse ring + bar
    ex, ey = (x - cx) / 26, (y - cy) / 38
    d = math.hypot(ex, ey)
    if abs(d - 1) < 0.13 or (abs(y - cy) < 4 and abs(x - cx) < 24):
        return (245, 245, 250, 255)
    # rising curve near the bottom
    yc = 112 - 30 / (1 + math.exp(-(x - 64) / 12))
    if abs(y - yc) < 2.5 and 10 < x < 118:
        return (255, 196, 60, 255)
    return bg

rows = b''.join(b'\x00' + bytes(c for x in range(W) for c in px(x, y)) for y in range(H))
def chunk(tag, data):
    return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', W, H, 8, 6, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows, 9)) + chunk(b'IEND', b'')
open('media/icon.png', 'wb').write(png)
