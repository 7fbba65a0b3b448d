// Checks that an npm install is whole. Seen once here: npm reported
// success while some packages had lost .js files, their .js.map files
// still beside the gap. Every X.js.map must have its X.js. A broken
// install fails here instead of in the tests that run it.
// Usage: node npm-check.mjs <node_modules dir>
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

// lru-cache 11 ships the maps of its build variants
// (diagnostics-channel-node.js.map, ...) beside the one variant it copies to
// diagnostics-channel.js: their own .js never existed.
const shippedWithoutJS = /[\\/]lru-cache[\\/]dist[\\/].*[\\/]diagnostics-channel-[a-z-]+\.js\.map$/;

const missing = [];
function walk(dir) {
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		if (e.isDirectory()) walk(p);
		else if (e.name.endsWith(".js.map") && !shippedWithoutJS.test(p) && !existsSync(p.slice(0, -".map".length))) missing.push(p.slice(0, -".map".length));
	}
}
walk(process.argv[2]);
if (missing.length > 0) {
	console.error(`npm-check: ${missing.length} installed files are missing, such as:\n  ${missing.slice(0, 5).join("\n  ")}`);
	process.exit(1);
}
