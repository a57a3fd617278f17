#!/bin/sh
# The tests of greet.sh: exit 0 if every case passes.
here=$(dirname "$0")
fail=0
check() { # check EXPECTED [ARGS...]
        expected=$1
        shift
        got=$(sh "$here/greet.sh" "$@")
        if [ "$got" = "$expected" ]; then
                echo "ok - greet $* -> $got"
        else
                echo "not ok - greet $*: expected '$expected', got '$got'"
                fail=1
        fi
}
check 'Hello, world!'
check 'Hello, agent!' agent
exit $fail
