/* SPDX-License-Identifier: MIT */
/*
 * manual.h: the manual pages built into the binary, one per command.
 *
 * manual.c is generated at build time by docs/manual.py from
 * docs/cloister-COMMAND.md, with the pandoc filter that also makes the man
 * page (docs/manpage.lua), so that `cloister help COMMAND` and
 * `man cloister-COMMAND` are one text. Never edit it; edit the page.
 */
#pragma once

struct manual_page {
        const char *name;    /* the command: "run" for cloister-run(1) */
        const char *summary; /* the page's Name line, after the dash */
        const char *text;    /* its Synopsis, Options and Exit status, as plain text */
};

/* Terminated by an entry whose name is NULL; empty in a -Ddocs=false build. */
extern const struct manual_page manual_pages[];
