"""Capture every frame on a network interface until killed (run inside an emulated host's namespace):
``python sniff.py IFACE OUT``. Appends each frame to OUT as it arrives."""

import socket
import sys

ETH_P_ALL = 0x0003

if __name__ == "__main__":
    iface, out = sys.argv[1], sys.argv[2]
    capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    capture.bind((iface, 0))
    with open(out, "ab", buffering=0) as sink:
        print("capturing", flush=True)
        while True:
            sink.write(capture.recv(65535))
