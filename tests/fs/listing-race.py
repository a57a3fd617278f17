#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""listing-race.py DIR ROUNDS: listings of a directory stay exact under churn.

Each round, one writer creates, unlinks and renames files in DIR for 0.3 s
while three other processes list DIR in a loop; then a listing must name
exactly the files the writer left. Long names make a listing span several
READDIRPLUS replies (600 files at the start). With the kernel's readdir
cache turned on for copy-on-write directories, a run like this on a loaded
machine got a wrong final listing in 37 rounds of 40 (entries already
removed stayed listed; 1 round of 30 on an idle one), which is why
cloister caches only its synthetic directories.
Exits 1 and says how if any round is wrong, 0 otherwise.
"""
import multiprocessing as mp
import os
import random
import sys
import time


def reader(d, stop):
    while not stop.is_set():
        os.listdir(d)


def main():
    d, rounds = sys.argv[1], int(sys.argv[2])
    os.makedirs(d)
    rng = random.Random(1)
    names, bad = set(), 0
    # Start big: the more READDIRPLUS replies a listing takes, the wider
    # the window in which the writer lands between two of them.
    for i in range(600):
        n = "seed%04d_%s" % (i, "y" * 100)
        open(os.path.join(d, n), "w").close()
        names.add(n)
    for r in range(rounds):
        stop = mp.Event()
        procs = [mp.Process(target=reader, args=(d, stop)) for _ in range(3)]
        for p in procs:
            p.start()
        try:
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                n = "f%05d_%s" % (rng.randrange(400), "x" * rng.randrange(1, 120))
                op = rng.random()
                if op < 0.5 or not names:
                    if n not in names:
                        open(os.path.join(d, n), "w").close()
                        names.add(n)
                elif op < 0.8:
                    v = rng.choice(sorted(names))
                    os.unlink(os.path.join(d, v))
                    names.discard(v)
                elif n not in names:
                    v = rng.choice(sorted(names))
                    os.rename(os.path.join(d, v), os.path.join(d, n))
                    names.discard(v)
                    names.add(n)
        finally:
            stop.set()
            for p in procs:
                p.join()
        got = set(os.listdir(d))
        if got != names:
            bad += 1
            print("# round %d: %d missing, %d listed but gone"
                  % (r, len(names - got), len(got - names)))
    print("# %d entries, %d of %d rounds wrong" % (len(names), bad, rounds))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
