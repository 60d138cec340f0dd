"""Idle subscribers in another process: bench/subscribers.py PORT N TRANSPORT, where
TRANSPORT is sse, multipart or websocket. Opens N onUserCreated subscriptions that
never read, waits until the service counts them, and prints the service's heap and
goroutine stacks and its RSS per subscriber (from /metrics and /proc)."""
import json
import os
import re
import socket
import struct
import sys
import time
import urllib.request

port, n, transport, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
sub = json.dumps({"query": "subscription { onUserCreated { id name } }"})


def frame(text):
    data, mask = text.encode(), os.urandom(4)
    head = bytes([0x81]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data)))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


if transport == "websocket":
    request = (b"GET /graphql HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               b"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
               + frame('{"type":"connection_init"}') + frame('{"id":"1","type":"subscribe","payload":%s}' % sub))
else:
    accept = "text/event-stream" if transport == "sse" else "multipart/mixed;subscriptionSpec=1.0"
    request = ("POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: %s\r\n"
               "Content-Length: %d\r\n\r\n%s" % (accept, len(sub), sub)).encode()


def metrics():
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port).read().decode()
    get = lambda name: float(re.search(r"(?m)^%s (\S+)$" % name, text).group(1))
    return get("go_memstats_heap_inuse_bytes") + get("go_memstats_stack_inuse_bytes"), get("quartet_websocket_subscriptions")


def rss():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024


heap0, _ = metrics()
rss0, conns = rss(), []
for i in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    conns.append(s)
deadline = time.time() + 120
while metrics()[1] < n and time.time() < deadline:
    time.sleep(0.5)
time.sleep(2)
heap1, active = metrics()
print("%s: %d subscriptions active; heap and stacks %.1f KB, RSS %.1f KB a subscriber"
      % (transport, active, (heap1 - heap0) / n / 1000, (rss() - rss0) / n / 1000))
