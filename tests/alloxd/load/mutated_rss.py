#!/usr/bin/env python3
"""Mutated requests against a running alloxd, then its resident memory against its live set
(driven by mutated_rss.sh, which starts alloxd).

  mutated_rss.py PID PORT DATA_DIR [REQUESTS]

Sends REQUESTS (default 100,000) bodies derived from the golden files in DATA_DIR (byte flips,
truncation, inserted tokens, deleted ranges, replaced or dropped values, fresh pod names so the
book grows) to /filter, /prioritize, /bind and /preempt, and GETs of /, /v1/queue, /metrics and
/v1/jobs/<id>, over 32 kept-alive connections at once (a filter of a pod alloxd has not seen
waits for the round that plans it: pods cycle through 1,000 names, mutations add others). Counts 5xx and hangs (no answer in 10 s).
Then waits 15 s (alloxd's idle path), reads VmRSS, and reads it again after gdb makes alloxd
call malloc_trim(0): that second figure is the live set (what the heap holds in use, plus
code). Prints both and their ratio; exits 1 on any 5xx or hang, or when RSS > 1.5 x live set.
"""
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

TOKENS = ["{", "}", "[", "]", ",", ":", '"', "null", "1e999", "-0", "\\u0000", "\xff", "true",
          '{"Pod":{}}']
REPLACEMENTS = [None, 7, -1, 3.5, "text", True, [], {}, [1, "x", None], {"metadata": 5}]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Mutator:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def mutate(self, body):
        k = self.r.randrange(8)
        if k == 0:
            b = bytearray(body)
            for _ in range(1 + self.r.randrange(4)):
                if b:
                    b[self.r.randrange(len(b))] = self.r.randrange(256)
            return bytes(b)
        if k == 1:
            return body[: self.r.randrange(len(body) + 1)]
        if k == 2:
            at = self.r.randrange(len(body) + 1)
            return body[:at] + self.r.choice(TOKENS).encode("utf-8", "surrogateescape") + body[at:]
        if k == 3:
            at = self.r.randrange(len(body))
            return body[:at] + body[at + 1 + self.r.randrange(20):]
        return self.structural(body)

    def structural(self, body):
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        nodes = []

        def collect(parent, key, node):
            nodes.append((parent, key, node))
            if isinstance(node, dict):
                for k, v in list(node.items()):
                    collect(node, k, v)
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    collect(node, i, v)

        collect(None, None, doc)
        parent, key, node = self.r.choice(nodes)
        op = self.r.randrange(3)
        if op == 0 and parent is not None:
            parent[key] = self.r.choice(REPLACEMENTS)
        elif op == 1 and isinstance(node, dict) and node:
            del node[self.r.choice(list(node))]
        elif isinstance(node, dict) and node and parent is not None:
            parent[key] = {k.lower(): v for k, v in node.items()}
        return json.dumps(doc).encode()


def fresh_names(doc, i):
    """A new pod (and job) per request, so the book grows as in a busy cluster."""
    pod = doc.get("Pod")
    if isinstance(pod, dict) and isinstance(pod.get("metadata"), dict):
        pod["metadata"]["name"] = f"fz-{i % 1000}"
        pod["metadata"]["uid"] = f"uid-{i % 1000}"
        pod["metadata"].setdefault("annotations", {})["allox.io/job"] = f"job-{i % 1000}"
    if "PodName" in doc:
        doc["PodName"] = f"fz-{i % 1000}"
        doc["PodUID"] = f"uid-{i % 1000}"
    return json.dumps(doc).encode()


class Conn:
    def __init__(self, port):
        self.port = port
        self.s = None

    def request(self, method, path, body=b""):
        """Returns the status, or 0 for a closed connection, -1 for a hang."""
        for attempt in range(2):
            if self.s is None:
                self.s = socket.create_connection(("127.0.0.1", self.port))
                self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.s.settimeout(10)
            head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                    "Content-Type: application/json\r\n\r\n").encode()
            try:
                self.s.sendall(head + body)
                return self.read_reply()
            except socket.timeout:
                self.s.close()
                self.s = None
                return -1
            except OSError:
                self.s.close()
                self.s = None
        return 0

    def read_reply(self):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.s.recv(65536)
            if not chunk:
                raise OSError("closed")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        close = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
            if name.strip().lower() == b"connection" and value.strip().lower() == b"close":
                close = True
        while len(rest) < length:
            chunk = self.s.recv(min(1 << 20, length - len(rest)))
            if not chunk:
                raise OSError("closed")
            rest += chunk
        if close:
            self.s.close()
            self.s = None
        return status


def main():
    pid, port, data = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    total = int(sys.argv[4]) if len(sys.argv) > 4 else 100_000
    seeds = {}
    for verb, name in [("/filter", "filter_args_nodecache.json"),
                       ("/prioritize", "filter_args_nodecache.json"),
                       ("/bind", "bind_args.json"),
                       ("/preempt", "preempt_args_nodecache.json")]:
        with open(os.path.join(data, name), "rb") as f:
            seeds[verb] = json.loads(f.read())
    rss_before = rss_kb(pid)
    counts = {}
    lock = threading.Lock()
    workers = 32

    def work(w):
        mutator = Mutator(45 + w)
        conn = Conn(port)
        mine = {}
        for i in range(w, total, workers):
            k = i % 10
            if k < 8:
                verb = ["/filter", "/filter", "/filter", "/prioritize", "/bind", "/preempt",
                        "/filter", "/prioritize"][k]
                body = fresh_names(json.loads(json.dumps(seeds[verb])), i)
                if i % 3:
                    body = mutator.mutate(body)
                status = conn.request("POST", verb, body)
            else:
                path = ["/", "/v1/queue", "/metrics", f"/v1/jobs/ml-team-a/job-{i % 1000}"][i % 4]
                status = conn.request("GET", path)
            mine[status] = mine.get(status, 0) + 1
        with lock:
            for status, n in mine.items():
                counts[status] = counts.get(status, 0) + n

    begin = time.monotonic()
    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fives = sum(n for status, n in counts.items() if status >= 500)
    hangs = counts.get(-1, 0)
    seconds = time.monotonic() - begin
    rss_after = rss_kb(pid)
    time.sleep(15)  # alloxd idle: whatever it does when idle has had its chance
    rss_idle = rss_kb(pid)
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int) malloc_trim(0)"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    live = rss_kb(pid)
    ratio = rss_idle / max(live, 1)
    print(f"{total} requests in {seconds:.1f} s; statuses {dict(sorted(counts.items()))}")
    print(f"RSS before {rss_before // 1024} MB, after {rss_after // 1024} MB, after 15 s idle "
          f"{rss_idle // 1024} MB; live set (after malloc_trim) {live // 1024} MB; "
          f"ratio {ratio:.2f}")
    ok = fives == 0 and hangs == 0 and ratio <= 1.5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
