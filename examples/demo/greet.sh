#!/bin/sh
# greet [NAME]: print a greeting for NAME (default: world).
printf 'Hello %s\n' "${1:-world}"
