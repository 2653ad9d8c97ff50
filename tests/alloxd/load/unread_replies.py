#!/usr/bin/env python3
"""Clients that send requests and never read the replies (driven by unread_replies.sh).

  unread_replies.py PID VERBS_PORT REPORTS_PORT WEBHOOK_PORT [JOBS] [CLIENTS] [HANDSHAKES]

1. Queues JOBS (default 3,000) jobs through /filter, so the status page is large.
2. CLIENTS (default 100) connections to the reports port, each sending 5 pipelined GET / and
   reading nothing, held for 15 s (beyond the 10 s read timeout); /healthz is probed on the
   reports port meanwhile. Reports alloxd's RSS growth at its peak (VmHWM) and after the
   clients are gone; passes when the peak growth is under 100 MB.
3. HANDSHAKES (default 10,000) connections to the TLS webhook port that send the first bytes
   of a ClientHello and stall, held for 15 s, while an HTTPS /healthz is probed from a process
   of its own. Reports the RSS growth; passes when the peak growth is under 100 MB and every
   probe answered.
"""
import json
import multiprocessing
import socket
import ssl
import sys
import threading
import time


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def client_context():
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def get(port, path, tls=False):
    # The TLS context first, as a real client has it (its CA file alone takes milliseconds to
    # load): its ClientHello follows the connection at once.
    context = client_context() if tls else None
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls:
        s = context.wrap_socket(s)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data.split(b" ", 2)[1]) if data else 0, len(data)


def filter_body(i):
    pod = {"metadata": {"name": f"train-{i}", "namespace": f"team-{i % 50}", "uid": f"u-{i}",
                        "annotations": {"allox.io/job": f"job-{i}"}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {
               "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["gpu-node-1"]}).encode()


def queue_jobs(port, jobs):
    def work(w):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        for i in range(w, jobs, 32):
            body = filter_body(i)
            s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            while len(rest) < length:
                rest += s.recv(65536)
        s.close()
    threads = [threading.Thread(target=work, args=(w,)) for w in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def probe_while(port, seconds, tls, report):
    failures = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if get(port, "/healthz", tls)[0] != 200:
                failures.append("status")
        except OSError as e:
            failures.append(str(e))
        time.sleep(0.5)
    report.send(failures)


def attack(pid, name, open_one, count, port, tls):
    before = status_kb(pid, "VmRSS")
    reset_peak(pid)
    # The prober is a process of its own, as a real client is: a thread of this one would wait
    # for the interpreter lock while the attack loop runs, and its ClientHello with it.
    context = multiprocessing.get_context("fork")
    failures_in, failures_out = context.Pipe(duplex=False)
    prober = context.Process(target=probe_while, args=(port, 15, tls, failures_out))
    prober.start()
    sockets = []
    for i in range(count):
        try:
            sockets.append(open_one())
        except OSError:
            pass
    failures = failures_in.recv()
    prober.join()
    peak = status_kb(pid, "VmHWM")
    closed_by_server = 0
    for s in sockets:
        s.setblocking(False)
        try:
            closed_by_server += 1 if s.recv(1) == b"" else 0
        except BlockingIOError:
            pass
        except OSError:
            closed_by_server += 1
        s.close()
    time.sleep(3)
    kept = status_kb(pid, "VmRSS")
    growth = (peak - before) // 1024
    print(f"{name}: {len(sockets)} connections; RSS before {before // 1024} MB, peak growth "
          f"{growth} MB, kept {(kept - before) // 1024} MB after they left; closed by alloxd "
          f"within 15 s: {closed_by_server}; /healthz failures {len(failures)}")
    return growth < 100 and not failures


def main():
    pid, verbs, reports, webhook = (int(a) for a in sys.argv[1:5])
    jobs = int(sys.argv[5]) if len(sys.argv) > 5 else 3000
    clients = int(sys.argv[6]) if len(sys.argv) > 6 else 100
    handshakes = int(sys.argv[7]) if len(sys.argv) > 7 else 10000
    queue_jobs(verbs, jobs)
    status, size = get(reports, "/")
    print(f"status page: {status}, {size // 1024} KB with {jobs} jobs queued")

    def non_reader():
        s = socket.create_connection(("127.0.0.1", reports))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 5)
        return s

    def stalled_handshake():
        s = socket.create_connection(("127.0.0.1", webhook))
        s.sendall(b"\x16\x03\x01")
        return s

    ok = attack(pid, "unread replies", non_reader, clients, reports, False)
    ok = attack(pid, "stalled TLS handshakes", stalled_handshake, handshakes, webhook, True) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
