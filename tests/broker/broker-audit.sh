#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The audit log: hash-chained, tamper-evident (edit, delete, reorder,
# truncate are each detected and the line named), never holding tokens or
# secrets, and the broker refuses to issue when it cannot write it.
. "$(dirname "$0")/lib.sh"

make_workspace ws1
start_broker "$T/ws1.ini" || { echo "Bail out! broker did not start"; exit 1; }
export CLOISTER_BROKER=$(sock ws1)
for _ in 1 2 3 4 5; do "$CLOISTER" token issue git >/dev/null; done
"$CLOISTER" token issue nosuchscope 2>/dev/null
stop_broker
log=$T/ws1/state/broker/audit.jsonl
cp "$log" "$T/orig.jsonl"
cp "$T/ws1/state/broker/audit.head" "$T/orig.head"
restore() { cp "$T/orig.jsonl" "$log"; cp "$T/orig.head" "$T/ws1/state/broker/audit.head"; }

check_rc "intact_log_verifies" 0 "$CLOISTER" audit verify "$T/ws1.ini"
check "verify_counts_the_entries" grep -q "7 entries, chain intact" "$T/out"
check "every_line_carries_prev_and_hash" test "$(grep -c '"prev":"[0-9a-f]\{64\}".*"hash":"[0-9a-f]\{64\}"}$' "$log")" = 7

sed -i '3s/"ttl":300/"ttl":301/' "$log"
check_rc "edited_line_is_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check "edited_line_is_named" grep -q "line 3: edited" "$T/err"
restore

sed -i '4d' "$log"
check_rc "deleted_line_is_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check "deletion_is_named_at_the_next_line" grep -q "line 4: seq 5 where 4 was expected: 1 line(s) deleted" "$T/err"
restore

python3 - "$log" <<'EOP'
import sys
p = sys.argv[1]; l = open(p).readlines(); l[1], l[2] = l[2], l[1]; open(p, "w").writelines(l)
EOP
check_rc "reordered_lines_are_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check "reordering_is_named" grep -q "line 2: seq 3 where 2 was expected" "$T/err"
restore

sed -i '$d' "$log"
check_rc "deleted_last_line_is_detected_by_the_head" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check "tail_deletion_is_named" grep -q "line 7: 1 line(s) deleted at the end" "$T/err"
restore

# A rewritten chain (every hash recomputed) still cannot hide a deletion at the end.
python3 - "$log" <<'EOP'
import sys, json, hashlib
p = sys.argv[1]
lines = open(p).read().splitlines()[:-1]
open(p, "w").write("\n".join(lines) + "\n")
EOP
check_rc "truncated_log_is_detected" 1 "$CLOISTER" audit verify --file "$log"
restore

sed -i '2s/$/ /' "$log"
check_rc "trailing_garbage_on_a_line_is_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
restore

# The head is the only check of the log's end: without it a cut tail would
# verify. A head missing (or emptied) beside a log with lines is a failure,
# for verify and for the broker, which would otherwise make a new one.
sed -i '$d' "$log"
rm "$T/ws1/state/broker/audit.head"
check_rc "a_cut_tail_with_its_head_deleted_is_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check "a_missing_head_is_named" grep -q "audit.head is missing but the log has 6 line(s)" "$T/err"
check_rc "the_broker_refuses_a_log_whose_head_is_missing" 1 "$CLOISTER" broker "$T/ws1.ini"
check "the_broker_leaves_the_missing_head_missing" test ! -e "$T/ws1/state/broker/audit.head"
: >"$T/ws1/state/broker/audit.head"
check_rc "an_emptied_head_is_detected" 1 "$CLOISTER" audit verify "$T/ws1.ini"
check_rc "the_broker_refuses_a_log_whose_head_is_empty" 1 "$CLOISTER" broker "$T/ws1.ini"
restore
rm "$T/ws1/state/broker/audit.head"
check_rc "a_whole_log_without_its_head_is_detected_too" 1 "$CLOISTER" audit verify --file "$log"
restore

# The broker refuses to continue a tampered log.
sed -i '2s/"ttl":300/"ttl":299/' "$log"
check_rc "broker_refuses_to_start_on_a_tampered_log" 1 "$CLOISTER" broker "$T/ws1.ini"
check "broker_names_the_tampered_line" grep -q "line 2: edited" "$T/err"
restore

# Fail closed: a 4 KiB file size limit makes the audit log unwritable soon.
(ulimit -f 4; exec "$CLOISTER" broker "$T/ws1.ini") 2>>"$T/broker.log" &
BROKER_PID=$!
BROKER_PIDS+=($!)
for _ in $(seq 600); do raw "$(sock ws1)" '{"op":"pubkey"}' >/dev/null 2>&1 && break; sleep 0.05; done
n_ok=0 refused=0
for _ in $(seq 10); do
        if "$CLOISTER" token issue git >"$T/tok" 2>"$T/err"; then n_ok=$((n_ok + 1)); else
                grep -q audit_unavailable "$T/err" && refused=$((refused + 1)); fi
done
check "broker_refuses_to_issue_when_the_audit_log_cannot_be_written" test "$refused" -gt 0
check "no_token_is_printed_when_refused" test ! -s "$T/tok"
check "broker_survives_a_full_audit_log" kill -0 "$BROKER_PID"
stop_broker
check_rc "failed_appends_leave_the_chain_intact" 0 "$CLOISTER" audit verify "$T/ws1.ini"
check "every_token_handed_out_is_in_the_log" test "$(grep -c '"event":"issue"' "$log")" = $((5 + n_ok))

# A new log gets its head at once, before its first line: a broker killed
# right after its first token leaves a log that verifies.
make_workspace ws2
start_broker "$T/ws2.ini" || { echo "Bail out! broker did not start"; exit 1; }
check "a_new_log_has_its_head_before_any_line" \
        grep -q "^0 0\{64\} *$" "$T/ws2/state/broker/audit.head"
"$CLOISTER" token issue git --socket "$(sock ws2)" >/dev/null
kill -KILL "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
check_rc "a_log_whose_broker_was_killed_verifies" 0 "$CLOISTER" audit verify "$T/ws2.ini"
done_testing
