"""The clients of bench/stall.sh: PORT SOCKETS ADDRESSES PID."""
import json
import socket
import sys
import time

port, n, addresses, pid = (int(a) for a in sys.argv[1:5])
query = json.dumps({"query": "{ posts { content } }"})
request = ("POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n%s" % (len(query), query)).encode()


def rss_mb():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024


def read_one_user():
    c = socket.socket()
    c.bind(("127.0.0.250", 0))
    c.settimeout(10)
    c.connect(("127.0.0.1", port))
    c.sendall(b"GET /api/users/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    ok = c.recv(100).startswith(b"HTTP/1.1 200")
    c.close()
    return ok


before, stalled = rss_mb(), []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(("127.0.0.%d" % (2 + i % addresses), 0))
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    stalled.append(s)  # and never read
peak, answers, end = before, [], time.time() + 13
while time.time() < end:
    peak = max(peak, rss_mb())
    start = time.time()
    try:
        ok = read_one_user()
    except OSError:
        ok = False
    answers.append(((time.time() - start) * 1000, ok))
    time.sleep(0.2)
print("%d stalled sockets from %d addresses: RSS %d MB before, %d MB at the peak; another address: "
      "%d of %d answered 200, the slowest in %.1f ms"
      % (n, addresses, before, peak, sum(ok for _, ok in answers), len(answers), max(ms for ms, _ in answers)))
