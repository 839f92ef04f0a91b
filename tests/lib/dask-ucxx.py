# Dask's distributed over ucxx: a local cluster (scheduler and two worker
# processes) whose comms are ucxx, CPU-only. Computes a sum over a 4000 x
# 4000 array in 16 chunks that travel between the workers, and a 80 MB
# array scattered to every worker, both checked against the same
# computation done locally. Prints what each process mapped:
#   result ok|wrong           the distributed sum equals the local one
#   scatter ok|wrong          the broadcast array arrived whole
#   maps NAME LIB...          the libuct and libucs files each process mapped
# Exit status 0 when both results are right.
import sys

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster


def mapped():
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and ("/libuct.so" in fields[5] or "/libucs.so" in fields[5]):
                found.add(fields[5])
    return sorted(found)


def main():
    ok = True
    with LocalCluster(protocol="ucxx", host="127.0.0.1", n_workers=2, threads_per_worker=1,
                      processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        x = da.random.RandomState(42).random((4000, 4000), chunks=(1000, 1000))
        got = (x + x.T).sum(axis=0).compute()
        local = x.compute()
        right = np.allclose(got, (local + local.T).sum(axis=0))
        print("result", "ok" if right else "wrong")
        ok &= bool(right)
        data = np.arange(10_000_000, dtype=np.int64)
        fut = client.scatter(data, broadcast=True)
        sums = client.run(lambda dask_worker: None)  # every worker answers
        total = client.submit(lambda a: int(a.sum()), fut).result()
        right = total == int(data.sum()) and len(sums) == 2
        print("scatter", "ok" if right else "wrong")
        ok &= bool(right)
        for name, libs in sorted(client.run(mapped).items()):
            print("maps worker", *libs)
        print("maps scheduler", *client.run_on_scheduler(mapped))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
