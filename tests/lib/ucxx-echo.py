# Two processes over ucxx (the RAPIDS UCX binding): the server echoes what
# it receives; the client sends messages of 1 B to 8 MiB, each a known
# pattern, checks every byte that comes back, then sends one last byte
# after which the server closes.
#   python3 ucxx-echo.py server PORTFILE   listens, writes its port to PORTFILE
#   python3 ucxx-echo.py client PORT       prints "echo N/N sizes intact"
# Exit status 0 when every size came back intact.
import asyncio
import os
import sys

import numpy as np
import ucxx

SIZES = [1, 8, 100, 4096, 65536, 1 << 20, 8 << 20]


def pattern(n):
    return (np.arange(n, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)


async def server(portfile):
    done = asyncio.Event()

    async def handler(ep):
        for n in SIZES:
            buf = np.empty(n, dtype=np.uint8)
            await ep.recv(buf)
            await ep.send(buf)
        # the client's last byte says it has everything back
        await ep.recv(np.empty(1, dtype=np.uint8))
        await ep.close()
        done.set()

    listener = ucxx.create_listener(handler)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{listener.port}\n")
    os.rename(tmp, portfile)
    await done.wait()
    listener.close()
    return 0


async def client(port):
    ep = await ucxx.create_endpoint("127.0.0.1", port)
    bad = 0
    for n in SIZES:
        msg = pattern(n)
        back = np.empty(n, dtype=np.uint8)
        await ep.send(msg)
        await ep.recv(back)
        if not np.array_equal(msg, back):
            bad += 1
            print(f"size {n}: the data came back altered")
    await ep.send(np.zeros(1, dtype=np.uint8))
    await ep.close()
    print(f"echo {len(SIZES) - bad}/{len(SIZES)} sizes intact")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(asyncio.run(server(sys.argv[2])))
    sys.exit(asyncio.run(client(int(sys.argv[2]))))
