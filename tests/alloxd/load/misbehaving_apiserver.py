#!/usr/bin/env python3
"""A misbehaving Kubernetes API server for alloxd's informer (driven by informer_load.sh).

  misbehaving_apiserver.py PORT MODE SECONDS COUNTS_FILE [READY_FILE]

Serves GET /api/v1/nodes and /api/v1/pods. LISTs answer an empty list at resourceVersion 1,
except in the big-list modes. MODE says what the watches (and lists) do:
  gone         every watch is answered 410 Gone
  end          every watch is a 200 whose body ends at once
  big-length   every LIST announces a 2 GB body (Content-Length) and sends it until the client
               goes away
  big-chunked  every LIST is a chunked 200 that sends 2 GB of list items, or until the client
               goes away
Every request is logged as "<seconds since start> LIST|WATCH <path>" to COUNTS_FILE; the
server ends itself after SECONDS. Anything else (events, leases, bindings) gets 404. Once it
listens it writes a line to READY_FILE (a FIFO the caller reads: an event, not a guessed delay).
"""
import socket
import sys
import threading
import time

GB = 1 << 30


def serve(conn, mode, begin, log, lock):
    conn.settimeout(30)
    buffer = b""
    try:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            line = head.split(b"\r\n")[0].decode()
            method, target, _ = line.split(" ", 2)
            path = target.split("?")[0]
            if method != "GET" or path not in ("/api/v1/nodes", "/api/v1/pods"):
                body = b'{"kind":"Status","code":404}'
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            watch = "watch=1" in target
            with lock:
                log.write(f"{time.monotonic() - begin:.3f} {'WATCH' if watch else 'LIST'} {path}\n")
                log.flush()
            if watch:
                if mode == "gone":
                    body = b'{"kind":"Status","code":410,"reason":"Expired"}'
                    conn.sendall(b"HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                    continue
                if mode == "end":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                    continue
                # A healthy watch in the big-list modes (never reached: the list fails).
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                time.sleep(30)
                return
            if mode == "big-length":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % (2 * GB) + b'{"items":[')
                piece = b" " * (1 << 20)
                for _ in range(2048):
                    conn.sendall(piece)
                return
            if mode == "big-chunked":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                item = (b'{"metadata":{"name":"n","resourceVersion":"1"}},' * 20000)
                chunk = b"%x\r\n%s\r\n" % (len(item), item)
                first = b'{"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":['
                conn.sendall(b"%x\r\n%s\r\n" % (len(first), first))
                sent = 0
                while sent < 2 * GB:
                    conn.sendall(chunk)
                    sent += len(item)
                return
            body = (b'{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},'
                    b'"items":[]}')
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    except OSError:
        return
    finally:
        conn.close()


def main():
    port, mode, seconds, counts = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    if len(sys.argv) > 5:
        with open(sys.argv[5], "w") as ready:
            ready.write("listening\n")
    listener.settimeout(0.5)
    begin = time.monotonic()
    lock = threading.Lock()
    with open(counts, "w") as log:
        while time.monotonic() - begin < seconds:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=serve, args=(conn, mode, begin, log, lock),
                             daemon=True).start()


if __name__ == "__main__":
    main()
