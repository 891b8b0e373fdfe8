# tests/check.sh: sourced by the shell tests that print one line a check.
#   check NAME STATUS [DETAIL]   "NAME  OK  DETAIL" when STATUS is 0, else
#                                FAIL; counts $run and $failed
# The name column is CHECK_WIDTH wide (default 64).
run=0
failed=0
check() {
    run=$((run + 1))
    if [ "$2" -eq 0 ]; then
        printf "%-${CHECK_WIDTH:-64}s OK   %s\n" "$1" "${3:-}"
    else
        failed=$((failed + 1))
        printf "%-${CHECK_WIDTH:-64}s FAIL %s\n" "$1" "${3:-}"
    fi
}
