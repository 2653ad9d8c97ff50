#!/usr/bin/env python3
"""Tenants against a running alloxd's memory (driven by hostile_tenants.sh).

  hostile_tenants.py PID PORT [USERS]

1. 20 pods in namespace lab, each with a 100 KB allox.io/user, offered to /filter for 60 s:
   every answer refuses them with a short reason; alloxd's RSS growth over the minute is printed
   and must stay under 10 MB (it was +18 MB/min while idle when each share sample copied every
   name).
2. USERS (default 10,000) pods of distinct users queued: /metrics must stay under 100 KB; the
   sizes of /v1/fairness, /v1/queue and the status page (all paged) are printed.
Exits 1 when a check fails.
"""
import concurrent.futures
import http.client
import json
import sys
import threading
import time

MB = 1 << 20


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


local = threading.local()


def request(port, method, path, body=None):
    conn = getattr(local, "conn", None)
    if conn is None:
        conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    return reply.status, reply.read()


def pod(name, user):
    annotations = {"allox.io/time.gpu": "100"}
    if user is not None:
        annotations["allox.io/user"] = user
    return {
        "metadata": {"name": name, "namespace": "lab", "uid": "uid-" + name,
                     "annotations": annotations},
        "spec": {"containers": [{"name": "main",
                                 "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
    }


def filter_body(p):
    return {"Pod": p, "Nodes": None, "NodeNames": ["node-1", "node-2"]}


def main():
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    users = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    failures = []

    huge = "u" * (100 << 10)
    pods = [pod(f"long-user-{i}", huge) for i in range(20)]
    before = rss_kb(pid)
    calls, largest, reason = 0, 0, ""
    end = time.time() + 60
    while time.time() < end:
        for p in pods:
            status, body = request(port, "POST", "/filter", filter_body(p))
            calls += 1
            largest = max(largest, len(body))
            answer = json.loads(body)
            reason = answer["FailedAndUnresolvableNodes"]["node-1"]
            if status != 200 or answer["NodeNames"]:
                failures.append(f"100 KB user: status {status}, {body[:200]!r}")
    after = rss_kb(pid)
    growth = (after - before) / 1024
    print(f"100 KB allox.io/user: {calls} /filter calls over 60 s, RSS {before / 1024:.1f} -> "
          f"{after / 1024:.1f} MB ({growth:+.1f} MB), largest answer {largest} bytes, "
          f"reason: {reason}")
    if growth > 10:
        failures.append(f"100 KB user: RSS grew {growth:.1f} MB")
    if "over Kubernetes' limit of 63" not in reason:
        failures.append(f"100 KB user: reason {reason!r}")

    def offer(i):
        name = f"user-{i:05d}"
        # A new job's /filter answers once a plan has seen it (first_plan_wait).
        return request(port, "POST", "/filter", filter_body(pod(f"job-{i}", name)))[0]

    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        codes = list(pool.map(offer, range(users)))
    bad = [c for c in codes if c != 200]
    if bad:
        failures.append(f"{len(bad)} of {users} filters answered {bad[0]}")
    # Every filter above answered once its job was booked; read every view.
    local.conn = None
    sizes = {}
    for path in ["/metrics", "/v1/fairness", "/v1/queue", "/"]:
        status, body = request(port, "GET", path)
        sizes[path] = len(body)
        if status != 200:
            failures.append(f"GET {path}: {status}")
    status, body = request(port, "GET", "/v1/queue?limit=1")
    total = json.loads(body)["page"]["queued_total"]
    print(f"{users} users queued in {time.time() - started:.0f} s ({total} jobs in the queue): "
          + ", ".join(f"{path} {size / 1024:.1f} KB" for path, size in sizes.items())
          + f"; RSS {rss_kb(pid) / 1024:.1f} MB")
    if sizes["/metrics"] >= 100 << 10:
        failures.append(f"/metrics is {sizes['/metrics']} bytes with {users} users")
    if total != users:
        failures.append(f"{total} jobs queued, want {users}")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


main()
