#!/usr/bin/env python3
"""Hostile clients against a running alloxd (driven by http_limits.sh, which starts alloxd).

  http_limits.py PID VERBS_PORT REPORTS_PORT [STALLED]

Each attack reports alloxd's resident-memory growth (peak VmHWM during the attack minus VmRSS
before it) and the answer alloxd gave:
  - a 1 GB body by Content-Length, and chunked, on each port (expect 413 long before 1 GB);
  - a 1 GB header on each port (expect 431);
  - STALLED (default 10,000) connections that send half a request line and stall, while
    /healthz is probed on both ports every 100 ms (every probe must answer), then the time
    until alloxd has closed all of them (its read timeout, or the connection cap).
Exits 1 when any check fails. Needs RLIMIT_NOFILE above STALLED (the shell raises it).
"""
import select
import socket
import sys
import time

GB = 1 << 30
RSS_LIMIT_KB = 20 * 1024


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def reset_peak(pid):
    # Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def poller_of(s):
    p = select.poll()
    p.register(s, select.POLLIN | select.POLLOUT)
    return p


def stream_until_answered(port, head, piece, total, deadline_s=120):
    """Sends head, then `piece` repeatedly up to `total` bytes, stopping as soon as the server
    answers or closes. Returns (status line, bytes sent, seconds)."""
    s = connect(port)
    begin = time.monotonic()
    sent = 0
    answer = b""
    s.sendall(head)
    s.setblocking(False)
    while sent < total and time.monotonic() - begin < deadline_s:
        events = dict(poller_of(s).poll(1000))
        if events.get(s.fileno(), 0) & (select.POLLIN | select.POLLHUP | select.POLLERR):
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            answer += chunk
            break
        if events.get(s.fileno(), 0) & select.POLLOUT:
            try:
                n = s.send(piece)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break  # closed or reset by the server
            sent += n
    s.setblocking(True)
    s.settimeout(5)
    try:
        while b"\r\n" not in answer:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    s.close()
    line = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed without an answer)"
    return line, sent, time.monotonic() - begin


def attack(pid, name, port, head, piece, expect):
    before = status_kb(pid, "VmRSS")
    reset_peak(pid)
    line, sent, seconds = stream_until_answered(port, head, piece, GB)
    peak = status_kb(pid, "VmHWM")
    growth = max(0, peak - before)
    ok = expect in line and growth < RSS_LIMIT_KB
    print(f"{'ok  ' if ok else 'FAIL'} {name:<44} answer '{line}' after {sent / 1e6:.1f} MB "
          f"sent, {seconds:.2f} s; RSS {before / 1024:.1f} MB -> peak {peak / 1024:.1f} MB "
          f"(+{growth / 1024:.1f} MB)")
    return ok


def probe(port):
    begin = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.settimeout(2)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = s.recv(4096)
        s.close()
        if not answer.startswith(b"HTTP/1.1 200"):
            print(f"     probe on port {port}: answer {answer[:40]!r}")
        return answer.startswith(b"HTTP/1.1 200"), time.monotonic() - begin
    except OSError as e:
        print(f"     probe on port {port} at {time.strftime('%H:%M:%S')}: {e!r} after {time.monotonic() - begin:.2f} s")
        return False, time.monotonic() - begin


def stalled_flood(pid, verbs, reports, count):
    before = status_kb(pid, "VmRSS")
    reset_peak(pid)
    begin = time.monotonic()
    conns = []
    probes = []
    next_probe = begin
    for i in range(count):
        port = verbs if i % 2 == 0 else reports
        try:
            s = connect(port)
            s.sendall(b"GET /healthz HTT")  # half a request line, then silence
            s.setblocking(False)
            conns.append(s)
        except OSError as e:
            print(f"     connection {i}: {e}")
            break
        if time.monotonic() >= next_probe:
            probes += [probe(verbs), probe(reports)]
            next_probe = time.monotonic() + 0.1
    opened = time.monotonic() - begin
    print(f"     {len(conns)} connections open at {time.strftime('%H:%M:%S')}")
    # Keep probing while the server works through them; count the ones it has closed.
    # Keep probing while alloxd works through them; a connection counts as closed at its EOF
    # (after a 408, or at once when the connection cap evicted it).
    poller = select.poll()
    by_fd = {}
    for s in conns:
        poller.register(s, select.POLLIN)
        by_fd[s.fileno()] = s
    closed_at = None
    while by_fd and time.monotonic() - begin < 60:
        probes += [probe(verbs), probe(reports)]
        for fd, _ in poller.poll(100):
            s = by_fd.get(fd)
            if s is None:
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                poller.unregister(fd)
                del by_fd[fd]
                s.close()
        if not by_fd:
            closed_at = time.monotonic() - begin
    open_set = list(by_fd.values())
    peak = status_kb(pid, "VmHWM")
    failed = sum(1 for good, _ in probes if not good)
    slowest = max((t for _, t in probes), default=0)
    ok = failed == 0 and not open_set and len(conns) == count
    print(f"{'ok  ' if ok else 'FAIL'} {count} stalled connections (half to each port): opened "
          f"in {opened:.1f} s, all closed by alloxd after "
          f"{closed_at if closed_at is not None else float('nan'):.1f} s "
          f"({len(open_set)} still open); /healthz probes {len(probes)}, failed {failed}, "
          f"slowest {slowest * 1000:.0f} ms; RSS {before / 1024:.1f} MB -> peak "
          f"{peak / 1024:.1f} MB")
    for s in open_set:
        s.close()
    return ok


def main():
    pid, verbs, reports = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    stalled = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    body = b"x" * 65536
    chunk = b"10000\r\n" + body + b"\r\n"
    header_piece = b"a" * 65536
    ok = True
    for port, name in ((verbs, "verbs"), (reports, "reports")):
        method = b"POST /filter" if port == verbs else b"GET /v1/queue"
        ok &= attack(pid, f"{name}: 1 GB body, Content-Length", port,
                     method + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % GB, body,
                     " 413 ")
        ok &= attack(pid, f"{name}: 1 GB body, chunked", port,
                     method + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                     chunk, " 413 ")
        ok &= attack(pid, f"{name}: 1 GB header", port,
                     method + b" HTTP/1.1\r\nHost: x\r\nX-Big: ", header_piece, " 431 ")
    ok &= stalled_flood(pid, verbs, reports, stalled)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
