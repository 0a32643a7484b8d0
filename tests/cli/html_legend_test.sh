#!/usr/bin/env bash
# The run report's legends in a headless Chromium: every legend entry (breakdown components,
# strategies of the iteration-time chart, memory terms) and every bar chart's row label (a strategy,
# here with a long knob list) lies wholly inside its chart's box, so nothing is clipped. A probe page (the report plus a script) measures each entry with
# getBoundingClientRect and writes the verdict into the DOM, which --dump-dom prints. Skips (77)
# without a Chromium. Usage: html_legend_test.sh HECATE_SIM SOURCE_ROOT
set -u
sim="$1"; root="$2"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then echo "skip: no chromium"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fx="$root/tests/fixtures"
fails=0
# Every strategy (long knob names in the iteration-time legend) on the tiny fixture.
"$sim" run dgx-h100-1node "$fx/tiny-trace.json" --model "$fx/tiny-model.yaml" --quiet \
  --strategy ep,fssdp:rematerialize=true:comm_queue=separate,fsdp,flexmoe,fastermoe,oracle,bound,ep:ep_size=4 \
  --report "$tmp/r.html" > /dev/null 2>&1 || { echo "FAIL: run --report"; exit 1; }
probe='<script>
const bad = [];
const items = document.querySelectorAll(".legend-item, .label");
const page = document.documentElement.scrollWidth;
for (const it of items) {
  const a = it.getBoundingClientRect(), b = it.ownerSVGElement.getBoundingClientRect();
  if (a.left < b.left - 0.5 || a.right > b.right + 0.5 || a.top < b.top - 0.5 || a.bottom > b.bottom + 0.5 || a.right > page)
    bad.push("OUTSIDE " + it.textContent + " [" + [a.left, a.top, a.right, a.bottom].map(Math.round) + "] in [" +
             [b.left, b.top, b.right, b.bottom].map(Math.round) + "]");
}
const p = document.createElement("pre");
p.id = "legend-check";
p.textContent = (bad.length ? bad.join("\n") : "LEGEND-INSIDE") + " items=" + items.length;
document.body.appendChild(p);
</script>'
{ sed 's|</body></html>||' "$tmp/r.html"; printf '%s\n</body></html>\n' "$probe"; } > "$tmp/probe.html"
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2400 \
  --dump-dom "file://$tmp/probe.html" > "$tmp/dom.html" 2> "$tmp/chromium.log"
# 13 components, 8 strategies, the memory terms; the row labels (strategy names) of the bar charts.
items=$(grep -oE 'class="(legend-item|label)"' "$tmp/r.html" | wc -l)
if grep -q "LEGEND-INSIDE items=$items" "$tmp/dom.html" && [ "$items" -ge 37 ]; then
  echo "ok: every legend entry and row label ($items) inside its chart in Chromium"
else
  echo "FAIL: legend entries outside their chart (of $items):"; grep -A20 'id="legend-check"' "$tmp/dom.html" | head -20
  fails=$((fails+1))
fi
# A screenshot, for a person to look at: HECATE_LEGEND_SCREENSHOT=FILE keeps it.
if [ -n "${HECATE_LEGEND_SCREENSHOT:-}" ]; then
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2400 \
    --screenshot="$HECATE_LEGEND_SCREENSHOT" "file://$tmp/r.html" > /dev/null 2>&1
fi
[ "$fails" -eq 0 ]
