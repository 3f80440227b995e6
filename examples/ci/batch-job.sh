#!/bin/sh
# A CI batch job (a nightly audit, a change across many packages): run a plan in a fresh clone,
# keep the report, and leave the merged work on its branch for review rather than landing it
# on the CI checkout. Usage: examples/ci/batch-job.sh PLAN.jsonl [REPORT.md]
#
# Exit codes are swarm's: 0 all merged, 1 a task failed, 3 parked work needs a look, 75
# stopped early (resumable with `swarm resume` in the same clone). Push the branch it names
# (`git push origin swarm/<run>`) to review the work as a pull request.
set -u
plan=${1:?usage: batch-job.sh PLAN.jsonl [REPORT.md]}
report=${2:-swarm-report.md}
swarm run "$plan" --land branch --final-out "$report" </dev/null
