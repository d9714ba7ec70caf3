"""A dataio.rdma server in its own process, driven by the tests.

    python _server.py '{"mode": "serve", "size": 1048576, "bind": "127.0.0.1:0"}'

Prints one JSON line ({"addr", "provider", "size", "pid"}), then answers one
JSON command per stdin line:

    {"cmd": "sha256", "offset": 0, "size": 10}   -> {"sha256": "..."} of the region bytes
    {"cmd": "fill", "offset": 0, "seed": 1, "size": 10} -> writes pseudo-random bytes, {"sha256": ...}
    {"cmd": "clients"}                           -> {"clients": n}
    {"cmd": "close"}                             -> closes, {"live_registrations": n}, exits

End of stdin closes the server and exits too.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys

from dataio import rdma
from dataio_rdma import _native


def main() -> None:
    args = json.loads(sys.argv[1])
    common = {"token": args.get("token"), "provider": args.get("provider"), "timeout": args.get("timeout", 10.0)}
    if args["mode"] == "file":
        server = rdma.serve_file(args["path"], bind=args["bind"], **common)
    else:
        server = rdma.serve(bind=args["bind"], buffer_size=args["size"], **common)
    view = memoryview(server)
    print(json.dumps({"addr": server.local_addr, "provider": server.provider, "size": server.size, "pid": __import__("os").getpid()}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "sha256":
            o, n = cmd["offset"], cmd["size"]
            print(json.dumps({"sha256": hashlib.sha256(view[o : o + n]).hexdigest()}), flush=True)
        elif cmd["cmd"] == "fill":
            o, n = cmd["offset"], cmd["size"]
            data = random.Random(cmd["seed"]).randbytes(n)
            view[o : o + n] = data
            print(json.dumps({"sha256": hashlib.sha256(data).hexdigest()}), flush=True)
        elif cmd["cmd"] == "clients":
            print(json.dumps({"clients": server.clients}), flush=True)
        elif cmd["cmd"] == "close":
            break
    view.release()
    server.close()
    print(json.dumps({"live_registrations": _native.live_registrations()}), flush=True)


if __name__ == "__main__":
    main()
