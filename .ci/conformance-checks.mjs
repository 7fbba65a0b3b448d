// Prints, comma-separated, the ids of the failed checks of one scenario
// in a results directory of the MCP conformance suite (its -o): the
// checks.json of DIR/<scenario>-<timestamp>/. Used by conformance-run.sh.
// Usage: node conformance-checks.mjs DIR SCENARIO
import fs from "node:fs";
import path from "node:path";

const [dir, name] = process.argv.slice(2);
const base = path.join(dir, path.dirname(name));
const escaped = path.basename(name).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const run = new RegExp(`^${escaped}-\\d{4}-\\d\\d-\\d\\dT`);
const ids = new Set();
for (const d of fs.existsSync(base) ? fs.readdirSync(base) : []) {
  const f = path.join(base, d, "checks.json");
  if (!run.test(d) || !fs.existsSync(f)) continue;
  for (const c of JSON.parse(fs.readFileSync(f, "utf8"))) {
    if (c.status === "FAILURE") ids.add(c.id);
  }
}
console.log([...ids].sort().join(","));
