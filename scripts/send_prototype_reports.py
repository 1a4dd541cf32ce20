#!/usr/bin/env python3
"""Send DTA reports built byte by byte in the original prototype's layout.

This is deliberately not our Go code: it packs the prototype's 3-byte base
header {opcode, seqnum, flags} and sub-headers with struct, as the prototype's
TRex generators and inject_dta.py do, and sends them as raw UDP.

usage: send_prototype_reports.py HOST PORT
Sends: Key-Write key 7 data 0xCAFEF00D (N=2), then key 7 data 0x0000BEEF
(overwrite); Key-Increment key 9 +5 and +7 (N=4); five postcards of flow 42 with
hop values 101..105; six Append entries 1..6 to list 2.
"""
import socket
import struct
import sys


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq = 0

    def send(opcode, body):
        nonlocal seq
        s.sendto(struct.pack("!BBB", opcode, seq & 0xFF, 0) + body, (host, port))
        seq += 1

    send(1, struct.pack("!BII", 2, 7, 0xCAFEF00D))
    send(1, struct.pack("!BII", 2, 7, 0x0000BEEF))
    send(3, struct.pack("!BIQ", 4, 9, 5))
    send(3, struct.pack("!BIQ", 4, 9, 7))
    for hop in range(1, 6):
        send(4, struct.pack("!IBI", 42, hop, 100 + hop))
    for v in range(1, 7):
        send(2, struct.pack("!II", 2, v))


if __name__ == "__main__":
    main()
