#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# forge-log.py T: the forgeries of issue 43 (item 4) on a copy of the
# stream T/stdout that cluster.sh's run wrote ([logs] stdout = json), made
# as one who can put lines on the stream and has read verify-chain would:
#   net-forged      a self-made net chain for a workspace without a proxy,
#                   its heads signed with a key of its own
#   net-plain       the old forgery: net lines in no chain
#   journal-forged  a journal line inserted (an unlink), .at its line
#   journal-edited  a journal line changed, .at its line
#   audit-edited    an audit line changed, .at its line
#   cut             the stream without its last three lines
import hashlib, os, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
T = sys.argv[1]
lines = open(f"{T}/stdout", encoding="utf-8").read().splitlines(True)
# A self-made net chain for wlogs (no proxy), started and ended by heads
# signed with a key of its own, as one who can read verify-chain would.
key = Ed25519PrivateKey.generate()
h = os.urandom(32)
cid = h.hex()[:16]
def head(n, h, final):
    body = ('{"cloister":"head","workspace":"wlogs","stream":"net","chain":"%s","lines":%d,'
            '"hash":"%s","dropped":0,"time":1,"final":%s,"kid":"k4.pid.AAAA"}'
            % (cid, n, h.hex(), "true" if final else "false"))
    return body[:-1] + ',"sig":"%s"}\n' % key.sign(body.encode()).hex()
net, prev = [head(0, h, False)], "0" * 64
for seq in (1, 2):
    inner = '{"event":"request","host":"evil.example","prev":"%s","seq":%d}' % (prev, seq)
    prev = hashlib.blake2b(inner.encode(), digest_size=32).hexdigest()
    inner = inner[:-1] + ',"hash":"%s"}' % prev
    c = ('{"cloister":"net","workspace":"wlogs","chain":"%s","n":%d,"prev":"%s","line":%s}'
         % (cid, seq, h.hex()[:16], inner))
    h = hashlib.blake2b(h + c.encode(), digest_size=32).digest()
    net.append(c + "\n")
net.append(head(2, h, True))
open(f"{T}/net-forged", "w").writelines(lines[:2] + net + lines[2:])
# The old forgery too: two unchained net lines.
open(f"{T}/net-plain", "w").writelines(lines + [
    '{"cloister":"net","workspace":"wlogs","line":{"seq":1,"prev":"%s","hash":"x"}}\n' % ("0" * 64)])
# A journal line inserted after the first journal copy: a copy of it, made an unlink.
j = [i for i, l in enumerate(lines) if l.startswith('{"cloister":"journal"')]
if j:
    forged = lines[j[0]].replace('"n":1,', '"n":2,').replace('"op":"journal_open"', '"op":"unlink"')
    open(f"{T}/journal-forged", "w").writelines(lines[:j[0] + 1] + [forged] + lines[j[0] + 1:])
    open(f"{T}/journal-forged.at", "w").write(str(j[0] + 2))
    edited = list(lines)
    edited[j[0]] = edited[j[0]].replace('"op":"journal_open"', '"op":"unlink"')
    open(f"{T}/journal-edited", "w").writelines(edited)
    open(f"{T}/journal-edited.at", "w").write(str(j[0] + 1))
# One audit line edited.
a = [i for i, l in enumerate(lines) if l.startswith('{"cloister":"audit"')][0]
edited = list(lines)
edited[a] = edited[a].replace('"scope":"git"', '"scope":"gid"')
open(f"{T}/audit-edited", "w").writelines(edited)
open(f"{T}/audit-edited.at", "w").write(str(a + 1))
# The stream cut: its last three lines gone (a final head among them).
open(f"{T}/cut", "w").writelines(lines[:-3])
