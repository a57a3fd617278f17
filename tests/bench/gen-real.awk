# SPDX-License-Identifier: MIT
#
# gen-real.awk: the fast-import stream of gen-repo's "real" shape, a
# repository shaped like the ones agents work in rather than a tidy one:
#
#   - folders of every size: most hold a handful to a few dozen entries
#     (lognormal, median 8), one in twenty a hundred or more, and a few
#     hold 500 to 3,000 (together 30% of the files, as test and driver
#     folders do), nested up to about ten deep;
#   - a long tail of file sizes: lognormal around 2.5 KB, and one file in
#     a hundred from a Pareto tail up to 2 MB;
#   - history: the first commit adds everything, then COMMITS commits each
#     change one to a dozen files (a small edit of a few lines), most of
#     them in a hot set that includes the big folders, so that their
#     trees have many versions; gen-repo then repacks with deltas.
#
# Every file is under data/ (the bench's append rows pick from there); one
# file in ten holds the word "needle" (grep -r). Randomness is Park-Miller
# (exact in awk's doubles, the same in every awk), looked up by the position
# of what it decides, so the stream, and so every commit id, is fixed for
# given FILES and COMMITS.
#
# Variables (-v): n data files, commits.

# A number in (0, 1) determined by the integers a, b and c: a table of
# Park-Miller outputs, indexed by a chain through it (an affine mix of a, b
# and c would make every such number a shift of the others).
function u3(a, b, c,    x) {
        x = RT[c % RN]
        x = RT[(b + x) % RN]
        return RU[(a + x) % RN]
}
function rtable(    s, k) {
        RN = 65521
        s = 20261206
        for (k = 0; k < RN; k++) {
                s = (s * 16807) % 2147483647
                RU[k] = s / 2147483647
                RT[k] = s % RN
        }
}
function normal(a, b, c) {
        return sqrt(-2 * log(u3(a, b, c))) * cos(6.283185307179586 * u3(a, b, c + 7))
}

# Words for names and text.
function words_init(    list, k) {
        list = "core util test data net io fs mem proc sched lock time hash list tree map " \
               "buf str parse config log error init exit read write open close sync queue " \
               "event signal thread pool cache index pack object ref remote fetch push diff " \
               "merge branch commit tag blob path file dir entry node attr perm user group " \
               "driver device block char input output video sound usb pci gpio clock power"
        nw = split(list, W, " ")
}

# The content of data file i at version v, about size[i] bytes.
function content(i, v,    want, piece, k, l, parts, np, line, a, b, m, s) {
        want = size[i]
        np = 0
        # Lines in pieces of up to 64, joined pairwise below so that a large
        # file costs n log n bytes of copying, not n^2.
        for (k = 0; want > 0; k++) {
                piece = ""
                for (l = 0; l < 64 && length(piece) < want; l++) {
                        a = int(u3(i, k, l) * nw) + 1
                        b = int(u3(l, i, k) * nw) + 1
                        line = sprintf("%s_%s(%d, \"%s %s\"); /* %d:%d */\n", W[a], W[b],
                                       (i * 31 + k * 7 + l) % 997, W[b], W[a], k, l)
                        # The edits of later versions: a few lines name the version.
                        if (v > 0 && (k * 64 + l) % 97 == (i + v * 13) % 97)
                                line = sprintf("\tedit(%d, %d);\n", v, i)
                        piece = piece line
                }
                parts[++np] = piece
                want -= length(piece)
        }
        while (np > 1) {
                m = 0
                for (l = 1; l <= np; l += 2)
                        parts[++m] = (l < np) ? parts[l] parts[l + 1] : parts[l]
                np = m
        }
        s = parts[1]
        if (i % 10 == 0)
                s = s "needle " i "\n"
        return s
}

function file_size(i,    x) {
        if (u3(i, 3, 3) < 0.01) {
                x = 20000 / (u3(i, 4, 4) ^ (1 / 1.2)) # Pareto tail
                return x > 2000000 ? 2000000 : int(x)
        }
        x = exp(log(2500) + 1.1 * normal(i, 5, 5))
        return x < 40 ? 40 : int(x)
}

BEGIN {
        rtable()
        words_init()
        if (n < 1)
                n = 1
        # Big folders: 30% of the files, 500 to 3,000 each (log-uniform),
        # when there are enough files for one.
        big = int(n * 0.3)
        nd = 0
        left = n
        while (big >= 500 && nd < 1000) {
                s = int(exp(log(500) + u3(nd, 11, 11) * (log(3000) - log(500))))
                if (s > big)
                        s = big
                dsize[++nd] = s
                dbig[nd] = 1
                big -= s
                left -= s
        }
        nbig = nd
        # The other folders: lognormal sizes (median 8), one in twenty 100 to 400.
        while (left > 0) {
                if (u3(nd, 12, 12) < 0.05)
                        s = 100 + int(u3(nd, 13, 13) * 300)
                else
                        s = int(exp(log(8) + 1.0 * normal(nd, 14, 14))) + 1
                if (s > left)
                        s = left
                dsize[++nd] = s
                left -= s
        }
        # Nesting: folder d hangs under an earlier one, the top ones more
        # often (u^2), and the first eight under data/. Big folders hang
        # under a small one, as tests/t or drivers/net would.
        order = 0
        for (d = 1; d <= nd; d++) {
                if (d <= nbig)
                        continue
                seq[++order] = d
        }
        for (d = 1; d <= nbig; d++)
                seq[++order] = d
        for (k = 1; k <= nd; k++) {
                d = seq[k]
                w = W[int(u3(d, 15, 15) * nw) + 1]
                if (k <= 8) {
                        dpath[d] = "data/" w d
                } else {
                        p = seq[int((k - 1) * u3(d, 16, 16) ^ 2) + 1]
                        dpath[d] = dpath[p] "/" w d
                }
        }
        # Files: folder by folder, names of varied length and extension.
        split("c h txt md sh py json", ext, " ")
        i = 0
        for (d = 1; d <= nd; d++) {
                for (f = 0; f < dsize[d]; f++) {
                        a = W[int(u3(i, 17, 17) * nw) + 1]
                        b = W[int(u3(i, 18, 18) * nw) + 1]
                        if (dbig[d])
                                name = sprintf("t%05d-%s-%s.%s", i, a, b, ext[int(u3(i, 19, 19) * 7) + 1])
                        else if (u3(i, 20, 20) < 0.5)
                                name = sprintf("%s_%s%d.%s", a, b, i, ext[int(u3(i, 19, 19) * 7) + 1])
                        else
                                name = sprintf("%s%d.%s", a, i, ext[int(u3(i, 19, 19) * 7) + 1])
                        path[i] = dpath[d] "/" name
                        size[i] = file_size(i)
                        ver[i] = 0
                        i++
                }
        }
        # The hot set: 2% of the files, half of them in the big folders
        # (whose files are numbered first).
        nbigfiles = 0
        for (d = 1; d <= nbig; d++)
                nbigfiles += dsize[d]
        nhot = int(n / 50) + 1
        for (h = 0; h < nhot; h++) {
                if (h % 2 == 0 && nbigfiles > 0)
                        hot[h] = int(u3(h, 23, 23) * nbigfiles)
                else
                        hot[h] = int(u3(h, 22, 22) * n)
        }

        t = 1600000000
        mark = 0
        # The first commit: everything.
        for (j = 0; j < n; j++) {
                s = content(j, 0)
                mark++
                printf "blob\nmark :%d\ndata %d\n%s\n", mark, length(s), s
                bmark[j] = mark
        }
        proj_blobs()
        printf "commit refs/heads/main\nmark :%d\n", ++mark
        printf "author Bench <bench@example.invalid> %d +0000\n", t
        printf "committer Bench <bench@example.invalid> %d +0000\n", t
        printf "data 14\nimport the lot\n"
        for (j = 0; j < n; j++)
                printf "M 100644 :%d %s\n", bmark[j], path[j]
        proj_tree()
        printf "\n"
        # History.
        for (c = 1; c <= commits; c++) {
                m = 1 + int(-log(u3(c, 24, 24)) * 2.5)
                if (m > 12)
                        m = 12
                printf "commit refs/heads/main\n"
                printf "author Bench <bench@example.invalid> %d +0000\n", t + c * 3600
                printf "committer Bench <bench@example.invalid> %d +0000\n", t + c * 3600
                msg = sprintf("change %d: %s %s", c, W[int(u3(c, 25, 25) * nw) + 1],
                              W[int(u3(c, 26, 26) * nw) + 1])
                printf "data %d\n%s\n", length(msg), msg
                delete done
                for (k = 0; k < m; k++) {
                        if (u3(c, k, 27) < 0.7)
                                j = hot[int(u3(c, k, 28) * nhot)]
                        else
                                j = int(u3(c, k, 29) * n)
                        if (j in done)
                                continue
                        done[j] = 1
                        ver[j]++
                        s = content(j, ver[j])
                        printf "M 100644 inline %s\ndata %d\n%s\n", path[j], length(s), s
                }
                printf "\n"
        }
}

# proj/: the C project that `make -j2` builds (as gen-repo's tidy shape).
function proj_blobs(    mk, h, mainc, u, c, f) {
        mk = "CC ?= cc\nCFLAGS ?= -O2\nSRCS := $(wildcard src/*.c)\nOBJS := $(SRCS:.c=.o)\n\n"
        mk = mk "prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n"
        mk = mk "src/%.o: src/%.c src/common.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
        mk = mk "clean:\n\trm -f prog $(OBJS)\n\n.PHONY: clean\n"
        pblob("proj/Makefile", mk)
        pblob("proj/.gitignore", "*.o\n/prog\n")
        h = "#pragma once\n#include <stddef.h>\n"
        for (u = 0; u < units; u++)
                h = h sprintf("long unit%04d(long x);\n", u)
        pblob("proj/src/common.h", h)
        mainc = "#include <stdio.h>\n#include \"common.h\"\n\nint main(void)\n{\n\tlong s = 0;\n"
        for (u = 0; u < units; u++)
                mainc = mainc sprintf("\ts += unit%04d(%d);\n", u, u)
        mainc = mainc "\tprintf(\"%ld\\n\", s);\n\treturn 0;\n}\n"
        pblob("proj/src/main.c", mainc)
        for (u = 0; u < units; u++) {
                c = "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"common.h\"\n\n"
                for (f = 0; f < 8; f++) {
                        c = c sprintf("static long step%d(long x, const char *tag)\n{\n", f)
                        c = c "\tchar buf[64];\n\tlong acc = x;\n"
                        c = c sprintf("\tfor (int i = 0; i < %d; i++) {\n", 10 + f)
                        c = c sprintf("\t\tsnprintf(buf, sizeof(buf), \"%%s-%%d-%%ld\", tag, i, acc);\n")
                        c = c sprintf("\t\tacc = acc * %d + (long)strlen(buf) + (acc >> %d);\n", 31 + f, 3 + f)
                        c = c "\t}\n\treturn acc;\n}\n\n"
                }
                c = c sprintf("long unit%04d(long x)\n{\n\tlong r = x;\n", u)
                for (f = 0; f < 8; f++)
                        c = c sprintf("\tr ^= step%d(r + %d, \"u%04d\");\n", f, f, u)
                c = c "\treturn r & 0xffff;\n}\n"
                pblob(sprintf("proj/src/unit%04d.c", u), c)
        }
}
function pblob(p, s) {
        mark++
        printf "blob\nmark :%d\ndata %d\n%s\n", mark, length(s), s
        np_++
        ppath[np_] = p
        pmark[np_] = mark
}
function proj_tree(    k) {
        for (k = 1; k <= np_; k++)
                printf "M 100644 :%d %s\n", pmark[k], ppath[k]
}
