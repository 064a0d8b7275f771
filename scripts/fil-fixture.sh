#!/usr/bin/env bash
# Prepares the 2KiB test fixtures (owner: Filecoin, crates/proofline-filecoin):
# random Groth16 parameters for the 2KiB circuits under the published v28-... file names, in
# ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}/params. Reused when present
# (PoRep: ~2.5 min and 1.1 GB on 2 cores the first time, --bellperson for bellperson's
# reference generator, 8.6-18 min; PoSt: seconds; SnapDeals update: minutes). Never touches
# /var/tmp/filecoin-proof-parameters or $FIL_PROOFS_PARAMETER_CACHE.
#
#   scripts/fil-fixture.sh                            PoRep parameters only
#   scripts/fil-fixture.sh --c1-out req.json          also seal a random 2KiB sector and write
#                                                     a porep-c2 request body (POST /v1/jobs)
#   scripts/fil-fixture.sh --window-post-out w.json   a window-post body (2 fresh sectors)
#   scripts/fil-fixture.sh --winning-post-out v.json  a winning-post body
#   scripts/fil-fixture.sh --snap-out s.json          a snap-update body (a fresh updated sector)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
exec cargo run --quiet --release -p proofline-filecoin --bin fil-fixture -- "$@"
