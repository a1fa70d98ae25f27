#!/usr/bin/env python3
"""A network link with a round-trip time and a bandwidth, between this
machine and a network namespace of its own, for the remote-read benchmarks.

usage: link_emulator.py NAME --rtt-ms MS --mbps MBIT [--mtu BYTES]

Makes network namespace NAME and two TUN devices, NAME-a here (10.203.0.1)
and NAME-b inside NAME (10.203.0.2), and forwards every IP packet between
them: each direction sends packets one after another at MBIT Mbit/s (10^6
bits), delivers each RTT/2 after it was sent, and drops packets arriving to
a queue already one bandwidth-delay product long (a drop-tail router). TCP
between the two sides sees the link as it would a real one: slow start,
losses and all. Servers started with `ip netns exec NAME ...` are reached at
10.203.0.2. Prints "ready" once the link is up and removes the namespace and
devices on SIGTERM or SIGINT. Needs root and /dev/net/tun (tc netem does the
same in the kernel, where the kernel has it).
"""
import argparse
import collections
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def sh(*commands, check=True):
    for c in commands:
        subprocess.run(c, shell=True, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def attach(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def teardown(name):
    sh(f"ip link del {name}-a", f"ip netns del {name}", check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--rtt-ms", type=float, required=True)
    ap.add_argument("--mbps", type=float, required=True)
    ap.add_argument("--mtu", type=int, default=9000)
    args = ap.parse_args()
    name = args.name
    teardown(name)
    sh(f"ip netns add {name}", f"ip tuntap add dev {name}-a mode tun", f"ip tuntap add dev {name}-b mode tun")
    fds = [attach(f"{name}-a"), attach(f"{name}-b")]
    sh(f"ip link set {name}-b netns {name}",
       f"ip addr add 10.203.0.1/30 dev {name}-a",
       f"ip link set {name}-a mtu {args.mtu} up",
       f"ip netns exec {name} ip addr add 10.203.0.2/30 dev {name}-b",
       f"ip netns exec {name} ip link set {name}-b mtu {args.mtu} up",
       f"ip netns exec {name} ip link set lo up")

    stop = False

    def on_signal(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    delay = args.rtt_ms / 2000.0
    seconds_per_byte = 8.0 / (args.mbps * 1e6)
    max_queue = max(args.rtt_ms / 1000.0, 16 * args.mtu * seconds_per_byte)  # one BDP, at least 16 packets
    busy = [0.0, 0.0]  # when each direction's sender is free
    queues = [collections.deque(), collections.deque()]  # (due, packet) per direction, due in order
    poller = select.epoll()
    for fd in fds:
        poller.register(fd, select.EPOLLIN)
    print("ready", flush=True)
    try:
        while not stop:
            now = time.monotonic()
            due = min((q[0][0] for q in queues if q), default=now + 0.1)
            try:
                events = poller.poll(max(0.0, due - now))
            except InterruptedError:
                continue
            for fd, _ in events:
                d = fds.index(fd)
                for _ in range(256):
                    try:
                        packet = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    now = time.monotonic()
                    start = max(now, busy[d])
                    if start - now > max_queue:
                        continue  # the queue is full: dropped
                    busy[d] = start + len(packet) * seconds_per_byte
                    queues[d].append((busy[d] + delay, packet))
            now = time.monotonic()
            for d in (0, 1):
                q = queues[d]
                while q and q[0][0] <= now:
                    try:
                        os.write(fds[1 - d], q.popleft()[1])
                    except OSError:
                        pass  # the receiving side's queue is full: dropped
    finally:
        for fd in fds:
            os.close(fd)
        teardown(name)


if __name__ == "__main__":
    sys.exit(main())
