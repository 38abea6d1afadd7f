"""Big-endian plain CDR written field by field (encapsulation 00 00), for the readers' tests.

rclpy only writes little-endian CDR; these bytes are what a big-endian peer would send,
which the node hands to rclpy's deserializer.
"""
import struct


class BigEndianCdr:
    """Append CDR fields; ``data`` is the message so far (header included)."""

    def __init__(self):
        self.out = bytearray(b'\x00\x00\x00\x00')

    @property
    def data(self):
        return bytes(self.out)

    def align(self, size):
        self.out.extend(b'\x00' * ((-(len(self.out) - 4)) % size))

    def uint32(self, value):
        self.align(4)
        self.out.extend(struct.pack('>I', value))

    def string(self, text):
        raw = text.encode() + b'\x00'
        self.uint32(len(raw))
        self.out.extend(raw)

    def header(self, sec=0, nanosec=0, frame_id=''):
        self.out.extend(struct.pack('>iI', sec, nanosec))
        self.string(frame_id)

    def strings(self, texts):
        self.uint32(len(texts))
        for text in texts:
            self.string(text)

    def doubles(self, values):
        self.uint32(len(values))
        if len(values):
            self.align(8)
            self.out.extend(struct.pack(f'>{len(values)}d', *values))

    def duration(self, seconds):
        sec, nanosec = divmod(int(round(seconds * 1e9)), 1_000_000_000)
        self.align(4)
        self.out.extend(struct.pack('>iI', sec, nanosec))
